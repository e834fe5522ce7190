package server

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/gofiber/fiber/v2/middleware/pprof"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"waitingroom/queue"
	"waitingroom/server/api"
)

func (s *Server) newAdminApp() *fiber.App {
	app := fiber.New(api.FiberConfig("waitingroom-admin", s.cfg.BodyLimit, s.log))
	s.guardProtocol(app) // first: nothing in Fiber runs before it
	app.Get("/metrics", adaptor.HTTPHandler(promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{})))
	app.Get("/healthz", func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"status": "ok"}) })
	app.Get("/readyz", s.readyz)
	// Profiles, for operators measuring memory and CPU under load.
	app.Use("/debug/pprof", s.adminAuth)
	app.Use(pprof.New())
	s.mountDashboard(app) // before the /admin group: the page itself needs no token
	adm := app.Group("/admin", s.adminAuth, api.NoStore)
	adm.Get("/rooms", s.adminRooms)
	adm.Get("/rooms/:room", s.adminRoom)
	adm.Put("/rooms/:room", s.adminPutRoom)
	adm.Get("/faults", s.adminGetFaults)
	adm.Put("/faults", s.adminPutFaults)
	adm.Get("/access", s.adminGetAccess)
	adm.Put("/access", s.adminPutAccess)
	return app
}

// readyz is 200 when Redis and Postgres each answer within a second
// (checked in parallel, so one slow dependency does not fail the other).
func (s *Server) readyz(c *fiber.Ctx) error {
	check := func(ping func(context.Context) error) <-chan string {
		out := make(chan string, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := ping(ctx); err != nil {
				out <- err.Error()
				return
			}
			out <- "ok"
		}()
		return out
	}
	rc := check(func(ctx context.Context) error { return s.rdb.Ping(ctx).Err() })
	pc := check(s.store.Ping)
	checks := fiber.Map{"redis": <-rc, "postgres": <-pc}
	if checks["redis"] != "ok" || checks["postgres"] != "ok" {
		return c.Status(fiber.StatusServiceUnavailable).JSON(fiber.Map{"status": "unavailable", "checks": checks})
	}
	return c.JSON(fiber.Map{"status": "ok", "checks": checks})
}

// adminAuth requires "Authorization: Bearer $WR_ADMIN_TOKEN" (compared in
// constant time). Without WR_ADMIN_TOKEN the admin API refuses everyone.
// Failures are logged as security events and throttled per address
// (adminauth.go): past the allowance, 429 before the token is compared.
func (s *Server) adminAuth(c *fiber.Ctx) error {
	if err := s.adminThrottled(c); err != nil {
		return err
	}
	want := s.cfg.AdminToken
	got := api.Bearer(c)
	if want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		s.adminFailed(c, got != "")
		return &api.Error{Status: 401, Code: "unauthorized", Message: "the admin API needs Authorization: Bearer $WR_ADMIN_TOKEN"}
	}
	return c.Next()
}

// roomDoc is a room as the admin API shows it.
type roomDoc struct {
	Room            string  `json:"room"`
	TargetActive    int64   `json:"targetActive"`
	EntryTTL        string  `json:"entryTtl"`
	EntryTTLSeconds float64 `json:"entryTtlSeconds"`
	Paused          bool    `json:"paused"`
	Waiting         int64   `json:"waiting"`
	Active          int64   `json:"active"`
	AdmissionRate   float64 `json:"admissionRate"`
	ServingTicket   int64   `json:"servingTicket"`
	Entered         int64   `json:"entered"`
	Admitted        int64   `json:"admitted"`
	Expired         int64   `json:"expired"`
	Left            int64   `json:"left"`
	Abandoned       int64   `json:"abandoned"`
	// Mode is "fixed" or "adaptive"; MinActive and MaxActive bound the
	// adaptive limit (the room's own, else WR_ADAPTIVE_MIN/MAX).
	Mode       string          `json:"mode"`
	MinActive  int64           `json:"minActive"`
	MaxActive  int64           `json:"maxActive"`
	Signals    signalsDoc      `json:"signals"`
	LastChange *limitChangeDoc `json:"lastChange"`
	// Method is fifo, random, passthrough or reject.
	Method string `json:"method"`
	// OpensAt is the scheduled opening (RFC 3339), null when none.
	OpensAt *time.Time `json:"opensAt"`
	// PreQueue counts users waiting for the opening (read-only).
	PreQueue int64 `json:"preQueue"`
	// ShuffleSeed is the seed of the last random opening (null when none):
	// with the arrival order it reproduces the shuffle (queue.Permutation).
	ShuffleSeed *string `json:"shuffleSeed"`
}

func toRoomDoc(r queue.RoomInfo) roomDoc {
	d := roomDoc{
		Room: r.Name, TargetActive: r.Target, EntryTTL: r.EntryTTL.String(), EntryTTLSeconds: r.EntryTTL.Seconds(),
		Paused: r.Paused, Waiting: r.Waiting, Active: r.Active, AdmissionRate: r.Rate, ServingTicket: r.Serving,
		Entered: r.Entered, Admitted: r.Admitted, Expired: r.Expired, Left: r.Left, Abandoned: r.Abandoned,
		Method: string(r.Method), PreQueue: r.PreQueue,
	}
	if !r.OpensAt.IsZero() {
		at := r.OpensAt
		d.OpensAt = &at
	}
	if r.ShuffleSeed != "" {
		seed := r.ShuffleSeed
		d.ShuffleSeed = &seed
	}
	return d
}

func (s *Server) adminRooms(c *fiber.Ctx) error {
	names, err := s.q.Rooms(c.UserContext())
	if err != nil {
		return err
	}
	out := make([]roomDoc, 0, len(names))
	for _, n := range names {
		r, err := s.q.Room(c.UserContext(), n)
		if errors.Is(err, queue.ErrRoomNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		d, err := s.roomDoc(c, r)
		if err != nil {
			return err
		}
		out = append(out, d)
	}
	return c.JSON(fiber.Map{"rooms": out})
}

// adminRoomName is the path's room name; an invalid one is a 400 (not a
// 404: no such room could ever exist, the request is wrong).
func adminRoomName(c *fiber.Ctx) (string, error) {
	room := roomParam(c)
	if !queue.ValidRoom(room) {
		return "", api.BadRequest("room names are 1-64 of a-z 0-9 - _")
	}
	return room, nil
}

func (s *Server) adminRoom(c *fiber.Ctx) error {
	room, err := adminRoomName(c)
	if err != nil {
		return err
	}
	r, err := s.q.Room(c.UserContext(), room)
	if err != nil {
		return err
	}
	d, err := s.roomDoc(c, r)
	if err != nil {
		return err
	}
	return c.JSON(d)
}

// roomPut is the body of PUT /admin/rooms/{room}; absent fields stay.
type roomPut struct {
	TargetActive *int64          `json:"targetActive"`
	EntryTTL     json.RawMessage `json:"entryTtl"` // "90s" or a number of seconds
	Paused       *bool           `json:"paused"`
	Mode         *string         `json:"mode"`      // "fixed" or "adaptive"
	MinActive    *int64          `json:"minActive"` // 0: back to WR_ADAPTIVE_MIN
	MaxActive    *int64          `json:"maxActive"` // 0: back to WR_ADAPTIVE_MAX
	Method       *string         `json:"method"`
	OpensAt      json.RawMessage `json:"opensAt"` // RFC 3339; null or "" clears
}

// adminPutRoom changes a room live (every instance's next admission run
// reads it) or creates it with the configured defaults.
func (s *Server) adminPutRoom(c *fiber.Ctx) error {
	if _, err := adminRoomName(c); err != nil {
		return err
	}
	var req roomPut
	if err := api.DecodeStrict(c, &req); err != nil {
		return err
	}
	var u queue.RoomUpdate
	if req.TargetActive != nil {
		if *req.TargetActive < 0 || *req.TargetActive > 1_000_000 {
			return api.BadRequest("targetActive must be from 0 to 1000000")
		}
		u.Target = req.TargetActive
	}
	if len(req.EntryTTL) > 0 {
		d, err := parseTTL(req.EntryTTL)
		if err != nil {
			return api.BadRequest(err.Error())
		}
		u.EntryTTL = &d
	}
	u.Paused = req.Paused
	if req.Mode != nil {
		m := queue.Mode(*req.Mode)
		if !queue.ValidMode(m) {
			return api.BadRequest(`mode must be "fixed" or "adaptive"`)
		}
		u.Mode = &m
	}
	if err := s.checkBounds(c, req, &u); err != nil {
		return err
	}
	if req.Method != nil {
		m, ok := queue.ParseMethod(*req.Method)
		if !ok {
			return api.BadRequest("method must be one of fifo, random, passthrough, reject")
		}
		u.Method = &m
	}
	if len(req.OpensAt) > 0 {
		at, err := parseOpensAt(req.OpensAt)
		if err != nil {
			return api.BadRequest(err.Error())
		}
		u.OpensAt = &at
	}
	r, err := s.q.UpdateRoom(c.UserContext(), roomParam(c), u, true, s.roomDefaults())
	if err != nil {
		return err
	}
	s.log.Info("room changed by admin", "room", r.Name, "targetActive", r.Target, "entryTtl", r.EntryTTL, "paused", r.Paused,
		"mode", r.Mode, "minActive", r.MinActive, "maxActive", r.MaxActive, "method", r.Method, "opensAt", r.OpensAt)
	d, err := s.roomDoc(c, r)
	if err != nil {
		return err
	}
	return c.JSON(d)
}

// parseOpensAt reads an opening time: an RFC 3339 string, or null or ""
// to clear it (returned as the zero time).
func parseOpensAt(raw json.RawMessage) (time.Time, error) {
	var str *string
	if err := json.Unmarshal(raw, &str); err != nil {
		return time.Time{}, errors.New("opensAt must be an RFC 3339 time such as \"2026-11-29T10:00:00+09:00\", or null to clear it")
	}
	if str == nil || *str == "" {
		return time.Time{}, nil
	}
	at, err := time.Parse(time.RFC3339, *str)
	if err != nil || at.Year() < 2000 || at.Year() > 9999 {
		return time.Time{}, fmt.Errorf("opensAt %q is not an RFC 3339 time such as \"2026-11-29T10:00:00+09:00\"", *str)
	}
	return at, nil
}

func parseTTL(raw json.RawMessage) (time.Duration, error) {
	return parseDurationField(raw, "entryTtl", "90s", time.Second, time.Second, 24*time.Hour)
}

// parseDurationField reads a JSON duration string (like example) or a
// number of unit, within [lo, hi]; errors name the field.
func parseDurationField(raw json.RawMessage, field, example string, unit, lo, hi time.Duration) (time.Duration, error) {
	var d time.Duration
	var str string
	var n float64
	unitName := map[time.Duration]string{time.Millisecond: "milliseconds", time.Second: "seconds"}[unit]
	switch {
	case json.Unmarshal(raw, &str) == nil:
		v, err := time.ParseDuration(str)
		if err != nil {
			return 0, fmt.Errorf("%s %q is not a duration like %s", field, str, example)
		}
		d = v
	case json.Unmarshal(raw, &n) == nil:
		d = time.Duration(n * float64(unit))
	default:
		return 0, fmt.Errorf("%s must be a duration string (%q) or a number of %s", field, example, unitName)
	}
	if d < lo || d > hi {
		return 0, fmt.Errorf("%s must be from %s to %s", field, fmtDuration(lo), fmtDuration(hi))
	}
	return d, nil
}

// fmtDuration writes whole hours and minutes as "24h" and "10m", not "24h0m0s".
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// checkBounds validates minActive/maxActive (each 0 for the default, else
// 1 to 1000000) and that the bounds in force after the change keep min ≤ max.
func (s *Server) checkBounds(c *fiber.Ctx, req roomPut, u *queue.RoomUpdate) error {
	if req.MinActive == nil && req.MaxActive == nil {
		return nil
	}
	for _, v := range []*int64{req.MinActive, req.MaxActive} {
		if v != nil && (*v < 0 || *v > 1_000_000) {
			return api.BadRequest("minActive and maxActive must be from 1 to 1000000 (0: the configured default)")
		}
	}
	var cur queue.RoomInfo
	if req.MinActive == nil || req.MaxActive == nil {
		r, err := s.q.Room(c.UserContext(), roomParam(c))
		if err != nil && !errors.Is(err, queue.ErrRoomNotFound) {
			return err
		}
		cur = r
	}
	lo, hi := cur.MinActive, cur.MaxActive
	if req.MinActive != nil {
		lo = *req.MinActive
	}
	if req.MaxActive != nil {
		hi = *req.MaxActive
	}
	if b := s.limitRule().WithBounds(lo, hi); b.Min > b.Max {
		return api.BadRequest("minActive must not be above maxActive")
	}
	u.MinActive, u.MaxActive = req.MinActive, req.MaxActive
	return nil
}
