package admin

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"waitingroom/queue"
	"waitingroom/server/api"
)

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
	// PassedOver counts the absent users the admission passed over, each
	// once (they keep their place until seen again or dropped as idle).
	PassedOver int64 `json:"passedOver"`
	// Mode is "fixed" or "adaptive"; MinActive and MaxActive bound the
	// adaptive limit (the room's own, else Options.Rule's Min and Max).
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
	// with the users shuffled it reproduces their order (queue.Shuffle).
	ShuffleSeed *string `json:"shuffleSeed"`
	// Gateway: the room's gateway settings (gateway mode only; absent
	// otherwise).
	Gateway *gatewayDoc `json:"gateway,omitempty"`
	// Message is the operator's message to the room's waiting users;
	// DisplayName and Description are what the page shows of the room
	// ("" when none).
	Message     string `json:"message"`
	DisplayName string `json:"displayName"`
	Description string `json:"description"`
	// ExpectedOrderSeconds is the operator's expected order time (0:
	// none): the ETA stands on it, provisionally, until the room has
	// measured its own.
	ExpectedOrderSeconds float64 `json:"expectedOrderSeconds"`
	// PrequeueParts is how many parts the room's pre-queue is spread over
	// (1: the room's own keys; more: hash tags of their own, so a Redis
	// Cluster spreads an opening burst, docs/sharded-prequeue.md).
	PrequeueParts int `json:"prequeueParts"`
	// ShuffleParts is how many parts the last random opening merged (1
	// when it was not sharded): with the seed and the users it rebuilds
	// the order (queue.ShuffleParts).
	ShuffleParts int `json:"shuffleParts"`
}

func toRoomDoc(r queue.RoomInfo) roomDoc {
	d := roomDoc{
		Room: r.Name, TargetActive: r.Target, EntryTTL: r.EntryTTL.String(), EntryTTLSeconds: r.EntryTTL.Seconds(),
		Paused: r.Paused, Waiting: r.Waiting, Active: r.Active, AdmissionRate: r.Rate, ServingTicket: r.Serving,
		Entered: r.Entered, Admitted: r.Admitted, Expired: r.Expired, Left: r.Left, Abandoned: r.Abandoned,
		PassedOver: r.PassedOver,
		Method:     string(r.Method), PreQueue: r.PreQueue,
		Message: r.Message, DisplayName: r.DisplayName, Description: r.Description,
		ExpectedOrderSeconds: r.ExpectedOrder.Seconds(),
		PrequeueParts:        max(r.PrequeueParts, 1), ShuffleParts: max(r.ShuffleParts, 1),
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

// HeaderDefinition is the header of a PUT /admin/rooms/{room} answer on an
// instance that records no room definitions (no Postgres: gateway mode
// without DATABASE_URL); its value is notRecorded's. The change is in
// force in Redis, but a Redis that lost its data loses it: a room of
// Options.Configured comes back with the configured defaults, any other
// does not come back.
const HeaderDefinition = "Waitingroom-Definition"

// notRecorded is HeaderDefinition's value: "not-recorded; " and why.
func (a *app) notRecorded() string {
	return "not-recorded; no Postgres (DATABASE_URL unset): after a Redis data loss only " + a.Names.Rooms + " rooms come back, with the configured defaults"
}

// errNotRecorded answers a change that is in force in Redis but whose
// definition Postgres did not record: repeating the PUT records it.
var errNotRecorded = &api.Error{Status: fiber.StatusServiceUnavailable, Code: "definition_not_recorded",
	Message:    "the change is in force, but Postgres did not record the room's definition, so a Redis that lost its data would lose it: repeat the same PUT once Postgres answers",
	RetryAfter: 1}

// roomParam returns the {room} path parameter as a string of its own:
// Fiber reuses the request's memory after the handler returns.
func roomParam(c *fiber.Ctx) string { return strings.Clone(c.Params("room")) }

// roomName is the path's room name; an invalid one is a 400 (not a 404:
// no such room could ever exist, the request is wrong).
func roomName(c *fiber.Ctx) (string, error) {
	room := roomParam(c)
	if !queue.ValidRoom(room) {
		return "", api.BadRequest("room names are 1-64 of a-z 0-9 - _")
	}
	return room, nil
}

func (a *app) room(c *fiber.Ctx) error {
	room, err := roomName(c)
	if err != nil {
		return err
	}
	r, err := a.Queue.Room(c.UserContext(), room)
	if err != nil {
		return err
	}
	d, err := a.roomDoc(c, r)
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
	MinActive    *int64          `json:"minActive"` // 0: back to Options.Rule's Min
	MaxActive    *int64          `json:"maxActive"` // 0: back to Options.Rule's Max
	Method       *string         `json:"method"`
	OpensAt      json.RawMessage `json:"opensAt"` // RFC 3339; null or "" clears
	Gateway      *gatewayPut     `json:"gateway"` // gateway mode only
	// Texts for waiting users and the page; "" (or null) clears.
	Message     json.RawMessage `json:"message"`     // at most 500 characters, newlines allowed
	DisplayName json.RawMessage `json:"displayName"` // at most 80 characters, one line
	Description json.RawMessage `json:"description"` // at most 500 characters, newlines allowed
	// ExpectedOrderSeconds: seconds from admission to a finished order,
	// 0.1 to 86400; 0 clears.
	ExpectedOrderSeconds *float64 `json:"expectedOrderSeconds"`
	// PrequeueParts: 1 to 16; changed only while the pre-queue is empty
	// (409 prequeue_not_empty).
	PrequeueParts *int `json:"prequeueParts"`
}

// putRoom changes a room live (every instance's next admission run reads
// it) or creates it with the configured defaults, then records its
// definition in Postgres (Definitions): the room's whole configuration the
// first time, later only the fields the request sets, so an adaptive
// room's recorded target stays the operator's, never the controller's.
// Postgres unreachable, the change stays in force and the answer is 503
// definition_not_recorded (errNotRecorded); it is audited all the same.
// Without Definitions the change is made in Redis alone (HeaderDefinition).
func (a *app) putRoom(c *fiber.Ctx) error {
	room, err := roomName(c)
	if err != nil {
		return err
	}
	var req roomPut
	if err := api.DecodeStrict(c, &req); err != nil {
		return err
	}
	u, err := a.roomUpdate(c, room, req)
	if err != nil {
		return err
	}
	if err := a.putGateway(c, room, req.Gateway); err != nil {
		return err
	}
	r, err := a.Queue.UpdateRoom(c.UserContext(), room, u, true, a.RoomDefaults)
	if err != nil {
		return err
	}
	// Redis first, so that a change made while Postgres is down (a pause
	// in an incident, say) still takes effect; the answer then says it
	// was not recorded. Without a record at all the change is made in
	// Redis alone, and the answer's header says so.
	if a.Definitions == nil {
		c.Set(HeaderDefinition, a.notRecorded())
	} else if err := a.Definitions.PutRoomDefinition(c.UserContext(), r.Name, r.RoomConfig, u); err != nil {
		inForce(c)
		return errors.Join(errNotRecorded, err)
	}
	a.Logger.Info("room changed by admin", "room", r.Name, "targetActive", r.Target, "entryTtl", r.EntryTTL, "paused", r.Paused,
		"mode", r.Mode, "minActive", r.MinActive, "maxActive", r.MaxActive, "method", r.Method, "opensAt", r.OpensAt,
		"expectedOrder", r.ExpectedOrder, "prequeueParts", r.PrequeueParts)
	d, err := a.roomDoc(c, r)
	if err != nil {
		return err
	}
	return c.JSON(d)
}

// roomUpdate validates req, in the order its fields are documented, into
// the change of room.
func (a *app) roomUpdate(c *fiber.Ctx, room string, req roomPut) (queue.RoomUpdate, error) {
	var u queue.RoomUpdate
	if req.TargetActive != nil {
		if *req.TargetActive < 0 || *req.TargetActive > 1_000_000 {
			return u, api.BadRequest("targetActive must be from 0 to 1000000")
		}
		u.Target = req.TargetActive
	}
	if len(req.EntryTTL) > 0 {
		d, err := parseTTL(req.EntryTTL)
		if err != nil {
			return u, api.BadRequest(err.Error())
		}
		u.EntryTTL = &d
	}
	u.Paused = req.Paused
	if req.Mode != nil {
		m := queue.Mode(*req.Mode)
		if !queue.ValidMode(m) {
			return u, api.BadRequest(`mode must be "fixed" or "adaptive"`)
		}
		u.Mode = &m
	}
	if err := a.checkBounds(c, room, req, &u); err != nil {
		return u, err
	}
	if req.Method != nil {
		m, ok := queue.ParseMethod(*req.Method)
		if !ok {
			return u, api.BadRequest("method must be one of fifo, random, passthrough, reject")
		}
		u.Method = &m
	}
	if len(req.OpensAt) > 0 {
		at, err := parseOpensAt(req.OpensAt)
		if err != nil {
			return u, api.BadRequest(err.Error())
		}
		u.OpensAt = &at
	}
	if v := req.ExpectedOrderSeconds; v != nil {
		if !(*v == 0 || *v >= 0.1 && *v <= 86400) {
			return u, api.BadRequest("expectedOrderSeconds must be from 0.1 to 86400 (0 clears it)")
		}
		d := time.Duration(*v * float64(time.Second)).Round(time.Millisecond)
		u.ExpectedOrder = &d
	}
	if v := req.PrequeueParts; v != nil {
		if *v < 1 || *v > queue.MaxPrequeueParts {
			return u, api.BadRequest("prequeueParts must be from 1 to 16")
		}
		u.PrequeueParts = v
	}
	return u, textUpdate(req, &u)
}

// textUpdate validates the texts of req (message, displayName,
// description) into u.
func textUpdate(req roomPut, u *queue.RoomUpdate) error {
	for _, t := range []struct {
		raw   json.RawMessage
		field string
		max   int
		lines bool
		dst   **string
	}{
		{req.Message, "message", maxMessage, true, &u.Message},
		{req.DisplayName, "displayName", maxDisplayName, false, &u.DisplayName},
		{req.Description, "description", maxDescription, true, &u.Description},
	} {
		if len(t.raw) == 0 {
			continue
		}
		v, err := parseText(t.raw, t.field, t.max, t.lines)
		if err != nil {
			return api.BadRequest(err.Error())
		}
		*t.dst = &v
	}
	return nil
}

// checkBounds validates minActive/maxActive (each 0 for the default, else
// 1 to 1000000) and that the bounds in force after the change keep min ≤ max.
func (a *app) checkBounds(c *fiber.Ctx, room string, req roomPut, u *queue.RoomUpdate) error {
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
		r, err := a.Queue.Room(c.UserContext(), room)
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
	if b := a.Rule.WithBounds(lo, hi); b.Min > b.Max {
		return api.BadRequest("minActive must not be above maxActive")
	}
	u.MinActive, u.MaxActive = req.MinActive, req.MaxActive
	return nil
}
