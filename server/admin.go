package server

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/gofiber/fiber/v2/middleware/pprof"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"waitingroom/queue"
)

func (s *Server) newAdminApp() *fiber.App {
	app := fiber.New(s.fiberConfig("waitingroom-admin"))
	app.Get("/metrics", adaptor.HTTPHandler(promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{})))
	app.Get("/healthz", func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"status": "ok"}) })
	app.Get("/readyz", s.readyz)
	// Profiles, for operators measuring memory and CPU under load.
	app.Use("/debug/pprof", s.adminAuth)
	app.Use(pprof.New())
	s.mountDashboard(app) // before the /admin group: the page itself needs no token
	adm := app.Group("/admin", s.adminAuth, noStore)
	adm.Get("/rooms", s.adminRooms)
	adm.Get("/rooms/:room", s.adminRoom)
	adm.Put("/rooms/:room", s.adminPutRoom)
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
func (s *Server) adminAuth(c *fiber.Ctx) error {
	want := s.cfg.AdminToken
	got := bearer(c)
	if want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return &apiError{status: 401, code: "unauthorized", message: "the admin API needs Authorization: Bearer $WR_ADMIN_TOKEN"}
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
}

func toRoomDoc(r queue.RoomInfo) roomDoc {
	return roomDoc{
		Room: r.Name, TargetActive: r.Target, EntryTTL: r.EntryTTL.String(), EntryTTLSeconds: r.EntryTTL.Seconds(),
		Paused: r.Paused, Waiting: r.Waiting, Active: r.Active, AdmissionRate: r.Rate, ServingTicket: r.Serving,
		Entered: r.Entered, Admitted: r.Admitted, Expired: r.Expired, Left: r.Left, Abandoned: r.Abandoned,
	}
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
		out = append(out, toRoomDoc(r))
	}
	return c.JSON(fiber.Map{"rooms": out})
}

func (s *Server) adminRoom(c *fiber.Ctx) error {
	r, err := s.q.Room(c.UserContext(), roomParam(c))
	if err != nil {
		return err
	}
	return c.JSON(toRoomDoc(r))
}

// roomPut is the body of PUT /admin/rooms/{room}; absent fields stay.
type roomPut struct {
	TargetActive *int64          `json:"targetActive"`
	EntryTTL     json.RawMessage `json:"entryTtl"` // "90s" or a number of seconds
	Paused       *bool           `json:"paused"`
}

// adminPutRoom changes a room live (every instance's next admission run
// reads it) or creates it with the configured defaults.
func (s *Server) adminPutRoom(c *fiber.Ctx) error {
	var req roomPut
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	var u queue.RoomUpdate
	if req.TargetActive != nil {
		if *req.TargetActive < 0 || *req.TargetActive > 1_000_000 {
			return errBadRequest("targetActive must be from 0 to 1000000")
		}
		u.Target = req.TargetActive
	}
	if len(req.EntryTTL) > 0 {
		d, err := parseTTL(req.EntryTTL)
		if err != nil {
			return errBadRequest(err.Error())
		}
		u.EntryTTL = &d
	}
	u.Paused = req.Paused
	r, err := s.q.UpdateRoom(c.UserContext(), roomParam(c), u, true, s.roomDefaults())
	if err != nil {
		return err
	}
	s.log.Info("room changed by admin", "room", r.Name, "targetActive", r.Target, "entryTtl", r.EntryTTL, "paused", r.Paused)
	return c.JSON(toRoomDoc(r))
}

func parseTTL(raw json.RawMessage) (time.Duration, error) {
	var d time.Duration
	var str string
	var secs float64
	switch {
	case json.Unmarshal(raw, &str) == nil:
		v, err := time.ParseDuration(str)
		if err != nil {
			return 0, fmt.Errorf("entryTtl %q is not a duration like 90s", str)
		}
		d = v
	case json.Unmarshal(raw, &secs) == nil:
		d = time.Duration(secs * float64(time.Second))
	default:
		return 0, errors.New("entryTtl must be a duration string (\"90s\") or a number of seconds")
	}
	if d < time.Second || d > 24*time.Hour {
		return 0, errors.New("entryTtl must be from 1s to 24h")
	}
	return d, nil
}
