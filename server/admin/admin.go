package admin

import (
	"context"
	"crypto/subtle"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/gofiber/fiber/v2/middleware/pprof"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"

	"waitingroom/queue"
	"waitingroom/queue/adaptive"
	"waitingroom/queue/estimate"
	"waitingroom/queue/history"
	"waitingroom/server/access"
	"waitingroom/server/admin/audit"
	"waitingroom/server/api"
	"waitingroom/server/faults"
	"waitingroom/server/gateway"
	"waitingroom/server/openapi"
	"waitingroom/server/seclog"
)

// Options are what the management app needs.
type Options struct {
	// Token is the admin API's bearer token; empty, it refuses everyone.
	Token     string
	BodyLimit int // request bodies; larger ones get 413
	Logger    *slog.Logger
	Sec       *seclog.Log // security events: failed and throttled authentications
	// Errors maps the errors of the domain packages the handlers return
	// (queue, faults, ...) to the contract's responses: the server's table.
	Errors api.Table
	// Guard is installed on the app first, before any Fiber middleware
	// (the server's protocol filter); nil for none.
	Guard func(app *fiber.App)
	// Metrics is served at /metrics.
	Metrics prometheus.Gatherer
	Queue   *queue.Queue
	// Controller reads a room's adaptive state; Rule is its limit rule
	// (the bounds a room falls back to); Window is the length of its
	// signals window, shown while a room has no evaluated window.
	Controller *adaptive.Controller
	Rule       adaptive.Rule
	Window     time.Duration
	Access     *access.Lists
	Faults     *faults.Faults
	// Gateway is the rooms' gateway settings; nil outside gateway mode.
	Gateway *gateway.Store
	// GatewayMode is ModeGateway, ModeForwardAuth, or "" (neither): what
	// GET /admin/stats reports of the shop (shop.go).
	GatewayMode string
	// RoomDefaults configure a room that PUT /admin/rooms/{room} creates.
	RoomDefaults queue.RoomConfig
	// Definitions is the durable record of the rooms (pgstore.Store):
	// every PUT /admin/rooms/{room} records the room's definition there,
	// DELETE removes it (roomdelete.go). Nil on an instance without
	// Postgres: the rooms live in Redis alone (HeaderDefinition).
	Definitions Definitions
	// Configured are the rooms created at start (admission.Options.Rooms),
	// which every instance creates again whenever they are missing: DELETE
	// refuses them.
	Configured []string
	// History is the rooms' shared history (and their longest waits);
	// Audit the log of the changes made through the admin API.
	History *history.History
	Audit   *audit.Log
	// Forecast is a room's wait forecast on this instance (the stream
	// hub's; see queue/estimate).
	Forecast func(room string) estimate.Forecast
	// PingRedis and PingPostgres are /readyz's checks of the dependencies
	// (PingPostgres nil: the instance has no Postgres, and /readyz names
	// no postgres check); CheckRooms its check that the configured rooms
	// exist in Redis (nil: none to check, it passes).
	PingRedis, PingPostgres, CheckRooms func(ctx context.Context) error
	// CheckOrigin is gateway mode's origin check (nil: no origin, and
	// /readyz names none): reported, never failing readiness.
	CheckOrigin func(ctx context.Context) error
	// ClientKey is the subject of the throttle (the client address's key);
	// ClientIP is the client address as logged.
	ClientKey, ClientIP func(c *fiber.Ctx) string
	// Names are the operator's names of the settings that answers ask to
	// change.
	Names Names
}

// Names are what the operator calls the settings that some answers of the
// admin API ask to change (cmd/waitingroom: its environment variables);
// the answers quote them as they are.
type Names struct {
	Token    string // Options.Token's: the bearer token (401)
	Rooms    string // Options.Configured's: the rooms created at start
	Upstream string // gateway mode's origin (gateway settings outside it)
	// Protect is the configured routes' (gateway.NewStore's defaults),
	// also the protectFrom of a room without routes of its own.
	Protect string
	// FaultInjection is the switch of fault injection (Faults.Enabled),
	// named with "=on" by the refusal of PUT /admin/faults.
	FaultInjection string
}

// Definitions is the durable record of room definitions the admin API
// keeps beside Redis (pgstore.Store has it): what a room is created again
// from when Redis lost its data.
type Definitions interface {
	PutRoomDefinition(ctx context.Context, room string, cfg queue.RoomConfig, u queue.RoomUpdate) error
	DeleteRoomDefinition(ctx context.Context, room string) ([]byte, error)
	RestoreRoomDefinition(ctx context.Context, room string, def []byte) error
}

// app is the management app's state: its options, the throttle, and the
// app's own routes as a handler (the audit reads documents through them).
type app struct {
	Options
	fails  throttle // failed admin authentications per address
	routes fasthttp.RequestHandler
}

// New builds the management app.
func New(o Options) *fiber.App {
	a := &app{Options: o}
	f := fiber.New(api.FiberConfig("waitingroom-admin", o.BodyLimit, o.Logger, o.Errors))
	a.routes = f.Server().Handler // Fiber's own, before the guard wraps it
	if o.Guard != nil {
		o.Guard(f) // first: nothing in Fiber runs before it
	}
	f.Use(api.RequestContext)
	f.Get("/metrics", adaptor.HTTPHandler(promhttp.HandlerFor(o.Metrics, promhttp.HandlerOpts{})))
	f.Get("/healthz", func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"status": "ok"}) })
	f.Get("/readyz", a.readyz)
	// Profiles, for operators measuring memory and CPU under load.
	f.Use("/debug/pprof", a.auth)
	f.Use(pprof.New())
	mountDashboard(f)                                         // before the /admin group: the page itself needs no token
	f.Get("/admin/openapi.json", api.Document(openapi.Admin)) // nor does the description
	// The management address itself leads to the dashboard.
	f.Get("/", func(c *fiber.Ctx) error { return c.Redirect("/admin/", fiber.StatusFound) })
	adm := f.Group("/admin", a.auth, api.NoStore, a.recordChanges)
	adm.Get("/rooms", a.rooms)
	adm.Get("/rooms/:room", a.room)
	adm.Put("/rooms/:room", a.putRoom)
	adm.Delete("/rooms/:room", a.deleteRoom)
	adm.Get("/rooms/:room/history", a.roomHistory)
	adm.Get("/faults", a.getFaults)
	adm.Put("/faults", a.putFaults)
	adm.Get("/access", a.getAccess)
	adm.Put("/access", a.putAccess)
	adm.Get("/stats", a.stats)
	adm.Get("/audit", a.getAudit)
	return f
}

// readyz is 200 when Redis and Postgres (when the instance uses it) each
// answer within a second and every configured room exists ("rooms": an
// instance whose Redis answers but lost the rooms would answer every enter
// 404). The checks run in parallel, a second each, so one slow check does
// not fail another; each is named in the body, "ok" or its error.
//
// In gateway mode the body also names "origin": "ok", or "unreachable: …"
// or "errors: …" (gateway.Gateway.OriginCheck). It never fails readiness:
// an instance whose origin is down still queues visitors and answers
// their waiting pages, and every instance shares the one origin, so
// taking them out of the balancer would turn a shop's outage into the
// waiting room's. A balancer reads the status code; an operator reads the
// origin check (and the dashboard).
func (a *app) readyz(c *fiber.Ctx) error {
	check := func(run func(context.Context) error) <-chan string {
		out := make(chan string, 1)
		if run == nil {
			out <- "ok"
			return out
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := run(ctx); err != nil {
				out <- err.Error()
				return
			}
			out <- "ok"
		}()
		return out
	}
	rc, roc := check(a.PingRedis), check(a.CheckRooms)
	var pc <-chan string
	if a.PingPostgres != nil {
		pc = check(a.PingPostgres)
	}
	var oc <-chan string
	if a.CheckOrigin != nil {
		oc = check(a.CheckOrigin)
	}
	checks := fiber.Map{"redis": <-rc, "rooms": <-roc}
	if pc != nil {
		checks["postgres"] = <-pc
	}
	status, code := "ok", fiber.StatusOK
	for _, v := range checks {
		if v != "ok" {
			status, code = "unavailable", fiber.StatusServiceUnavailable
		}
	}
	if oc != nil {
		checks["origin"] = <-oc // reported, not failing (see above)
	}
	return c.Status(code).JSON(fiber.Map{"status": status, "checks": checks})
}

// auth requires "Authorization: Bearer " and Options.Token (compared in
// constant time). Without a token the admin API refuses everyone.
// Failures are logged as security events and throttled per address
// (throttle.go): past the allowance, 429 before the token is compared.
func (a *app) auth(c *fiber.Ctx) error {
	if err := a.throttled(c); err != nil {
		return err
	}
	want := a.Token
	got := api.Bearer(c)
	if want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		a.failed(c, got != "")
		return &api.Error{Status: 401, Code: "unauthorized", Message: "the admin API needs Authorization: Bearer $" + a.Names.Token}
	}
	return c.Next()
}
