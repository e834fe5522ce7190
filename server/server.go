package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"waitingroom/internal/loop"
	"waitingroom/queue"
	"waitingroom/queue/adaptive"
	"waitingroom/queue/admission"
	"waitingroom/queue/history"
	"waitingroom/queue/presence"
	"waitingroom/server/access"
	"waitingroom/server/accesslog"
	"waitingroom/server/admin"
	"waitingroom/server/admin/audit"
	"waitingroom/server/checkout"
	"waitingroom/server/client"
	"waitingroom/server/crosssite"
	"waitingroom/server/faults"
	"waitingroom/server/gateway"
	"waitingroom/server/listener"
	"waitingroom/server/login"
	"waitingroom/server/metrics"
	"waitingroom/server/pass"
	"waitingroom/server/pow"
	"waitingroom/server/protocol"
	"waitingroom/server/push"
	"waitingroom/server/queuestatus"
	"waitingroom/server/ratelimit"
	"waitingroom/server/ratelimit/httplimit"
	"waitingroom/server/ratelimit/local"
	"waitingroom/server/readiness"
	"waitingroom/server/seclog"
	"waitingroom/server/token"
	"waitingroom/stream"
)

// Deps are the components the HTTP adapters call, each built and
// configured by the composition root (cmd/waitingroom), which also runs
// their background loops. Every one is required, except those of gateway
// mode (Gateway: nil when it is off) and those that need Postgres, which an
// instance without it lacks (Logins, Checkout, Definitions: nil).
type Deps struct {
	// Logger is the instance's; lines logged while serving a request carry
	// its id when it wraps api.LogHandler.
	Logger  *slog.Logger
	Metrics *metrics.Metrics // counted by the adapters; its registry is served at /metrics
	Tokens  *token.Issuer
	Queue   *queue.Queue
	Hub     *stream.Hub // the pushes, and the polls answered from memory
	// Presence marks the waiting users seen here present (the polls).
	Presence *presence.Presence
	Limiter  *ratelimit.Limiter // layer 1's shared limits
	Polls    *local.Limiter     // the poll pace, in this instance's memory
	Access   *access.Lists      // deny, allow and bypass lists
	Logins   *login.Login       // the login use case; nil: off (no Postgres)
	Checkout *checkout.Checkout // the order use case; nil: off (no Postgres)
	Sec      *seclog.Log        // security events
	// AccessPublic and AccessAdmin are the two ports' access logs.
	AccessPublic, AccessAdmin *accesslog.Log
	// The management app's: the admission loop (whose room defaults PUT
	// /admin/rooms creates rooms with), the adaptive limit controller, the
	// injected faults, the rooms' shared history, the admin audit log and
	// the readiness checks (GET /readyz).
	Admitter   *admission.Admitter
	Controller *adaptive.Controller
	Faults     *faults.Faults
	History    *history.History
	Audit      *audit.Log
	Readiness  *readiness.Checks
	// Gateway mode's parts; nil when it is off.
	Gateway *GatewayParts
	// Definitions is the durable record of the rooms' definitions
	// (pgstore.Store), which the admin API's PUT and DELETE keep (nil: none,
	// the rooms live in Redis alone); ConfiguredRooms are the rooms the
	// admission loop creates at start (admission.Options.Rooms), which it
	// never deletes.
	Definitions     admin.Definitions
	ConfiguredRooms []string
}

// GatewayParts are gateway mode's components (gatewaymode.go).
type GatewayParts struct {
	Proxy    *gateway.Gateway // the origin's requests, below Fiber
	Settings *gateway.Store   // the rooms' gateway settings
	Passes   *pass.Signer     // published at /.well-known/jwks.json
	PoW      *pow.Pow         // the anonymous enters' proof of work
}

// Server is one instance's HTTP face: the public API and page, and the
// management endpoints, over the components of Deps.
type Server struct {
	cfg       Config
	q         *queue.Queue
	tokens    *token.Issuer
	m         *metrics.Metrics
	log       *slog.Logger
	public    *fiber.App
	admin     *fiber.App
	hub       *stream.Hub
	limiter   *ratelimit.Limiter
	rl        *httplimit.Limits  // layer 1 at the HTTP layer
	crossSite *crosssite.Gate    // refuses cross-site requests
	sec       *seclog.Log        // security events (package seclog)
	checkout  *checkout.Checkout // the order use case
	acl       *access.Lists      // deny, allow and bypass lists
	presence  *presence.Presence
	clients   client.Resolver  // who a request's client is
	docs      queuestatus.Docs // how a status reads
	streams   *push.Streams    // SSE and WebSocket
	// fwdStreams: open streams per forwarded client address (holdStream).
	fwdStreams listener.Counts
	logins     *login.Login // the login use case
	// Gateway mode (gatewaymode.go); nil and "" when it is off.
	gw         *gateway.Gateway
	gwSettings *gateway.Store
	passes     *pass.Signer
	pow        *pow.Pow
	prefix     string // where the page and API live: "" or gateway.Prefix
	// notForwarded answers a path of the origin's in forward auth.
	notForwarded *protocol.Refusal
	// The ports' access logs (accesslog.go).
	accessPublic, accessAdmin *accesslog.Log
}

// New builds the Server's two apps and their routes over d's components.
// It does no I/O and starts nothing.
func New(d Deps, cfg Config) (*Server, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if cfg.Listener.MaxConns <= 0 {
		return nil, errors.New("server: Config.Listener.MaxConns must be positive")
	}
	if cfg.Listener.PerAddr == 0 {
		cfg.Listener.PerAddr = listener.PerAddressCap(cfg.Listener.MaxConns)
	}
	s := &Server{
		cfg: cfg, q: d.Queue, tokens: d.Tokens, m: d.Metrics, log: d.Logger, hub: d.Hub,
		limiter: d.Limiter, sec: d.Sec, checkout: d.Checkout, acl: d.Access,
		presence: d.Presence, logins: d.Logins, clients: cfg.clients(),
		accessPublic: d.AccessPublic, accessAdmin: d.AccessAdmin,
	}
	s.docs = queuestatus.Docs{Bands: cfg.PollBands, Forecast: d.Hub.Forecast}
	if g := d.Gateway; g != nil {
		s.gw, s.gwSettings, s.passes, s.pow = g.Proxy, g.Settings, g.Passes, g.PoW
		s.prefix = gateway.Prefix
		s.notForwarded = notForwarded(cfg.Names.ForwardAuth)
	}
	s.crossSite = &crosssite.Gate{Origins: cfg.CORSOrigins, Anonymous: d.Gateway != nil,
		Cookie: queueCookie, Clients: s.clients, Sec: s.sec}
	s.rl = httplimit.New(httplimit.Options{
		On: cfg.RateLimits, Limiter: d.Limiter, Polls: d.Polls, Exempt: s.exempt,
		ClientIP: s.clientIP, Sec: s.sec, RateLimited: s.m.RateLimited,
	})
	s.streams = push.New(push.Options{
		Hub: s.hub, SSE: cfg.SSE, WS: cfg.WS, Open: s.openStream,
		Docs: s.docs, IdleDoc: s.idleDoc(), Metrics: s.m,
	})
	s.public = s.newPublicApp()
	// Outermost, before Fiber's routing: every complete request, whatever
	// its route, lifts its connection's first-request deadline.
	s.public.Server().Handler = markServed(s.public.Server().Handler)
	s.admin = s.newAdminApp(d)
	return s, nil
}

// check reports the first component missing from d.
func (d Deps) check() error {
	required := []struct {
		name    string
		missing bool
	}{
		{"Logger", d.Logger == nil}, {"Metrics", d.Metrics == nil}, {"Tokens", d.Tokens == nil},
		{"Queue", d.Queue == nil}, {"Hub", d.Hub == nil}, {"Presence", d.Presence == nil},
		{"Limiter", d.Limiter == nil}, {"Polls", d.Polls == nil}, {"Access", d.Access == nil},
		{"Sec", d.Sec == nil},
		{"AccessPublic", d.AccessPublic == nil}, {"AccessAdmin", d.AccessAdmin == nil},
		{"Controller", d.Controller == nil}, {"Faults", d.Faults == nil}, {"History", d.History == nil},
		{"Audit", d.Audit == nil}, {"Readiness", d.Readiness == nil},
	}
	for _, r := range required {
		if r.missing {
			return errors.New("server: Deps." + r.name + " is required")
		}
	}
	if g := d.Gateway; g != nil && (g.Proxy == nil || g.Settings == nil || g.Passes == nil || g.PoW == nil) {
		return errors.New("server: Deps.Gateway needs all four parts")
	}
	return nil
}

// newAdminApp builds the management app (package admin) over d's queue,
// controller, lists, faults, history, audit log and readiness checks.
func (s *Server) newAdminApp(d Deps) *fiber.App {
	var pingPostgres func(context.Context) error // none: not checked
	if d.Readiness.UsesPostgres() {
		pingPostgres = d.Readiness.Postgres
	}
	var checkOrigin func(context.Context) error // none: no origin of ours
	gatewayMode := ""
	if g := d.Gateway; g != nil && g.Proxy.ForwardAuth() {
		gatewayMode = admin.ModeForwardAuth
	} else if g != nil {
		gatewayMode, checkOrigin = admin.ModeGateway, g.Proxy.OriginCheck
	}
	return admin.New(admin.Options{
		Token:        s.cfg.AdminToken,
		BodyLimit:    s.cfg.BodyLimit,
		Logger:       s.log,
		Errors:       errorTable,
		Sec:          s.sec,
		Guard:        s.guardProtocol,
		Metrics:      s.m.Registry,
		Queue:        s.q,
		Controller:   d.Controller,
		Rule:         d.Controller.Rule(),
		Window:       d.Controller.Window(),
		Access:       s.acl,
		Faults:       d.Faults,
		Gateway:      s.gwSettings,
		GatewayMode:  gatewayMode,
		RoomDefaults: d.Admitter.Defaults(),
		Definitions:  d.Definitions,
		Configured:   d.ConfiguredRooms,
		History:      d.History,
		Audit:        d.Audit,
		Forecast:     s.hub.Forecast,
		PingRedis:    d.Readiness.Redis,
		PingPostgres: pingPostgres,
		CheckRooms:   d.Readiness.Rooms,
		CheckOrigin:  checkOrigin,
		ClientKey:    s.clientKey,
		ClientIP:     s.clientIP,
		Names:        s.cfg.Names.Admin,
	})
}

// Public returns the public app (API and page).
func (s *Server) Public() *fiber.App { return s.public }

// Admin returns the management app.
func (s *Server) Admin() *fiber.App { return s.admin }

// Run listens on the configured addresses and serves until ctx is done
// (Serve; the loops are the caller's). A failure to listen is a
// *ListenError.
func (s *Server) Run(ctx context.Context) error {
	pub, err := net.Listen("tcp", s.cfg.HTTPAddr)
	if err != nil {
		return &ListenError{Field: "HTTPAddr", Addr: s.cfg.HTTPAddr, Err: err}
	}
	adm, err := net.Listen("tcp", s.cfg.AdminAddr)
	if err != nil {
		pub.Close()
		return &ListenError{Field: "AdminAddr", Addr: s.cfg.AdminAddr, Err: err}
	}
	return s.Serve(ctx, pub, adm)
}

// ListenError is Run's failure to listen on one of Config's two
// addresses; Field names which: "HTTPAddr" (the public address) or
// "AdminAddr" (the management address).
type ListenError struct {
	Field, Addr string
	Err         error
}

func (e *ListenError) Error() string {
	which := "public"
	if e.Field == "AdminAddr" {
		which = "management"
	}
	return fmt.Sprintf("server: listen on the %s address %s: %v", which, e.Addr, e.Err)
}

func (e *ListenError) Unwrap() error { return e.Err }

// Serve serves the public and management apps on the given listeners until
// ctx is done or a listener fails; then it shuts down within
// Config.Shutdown: streams first (told to reconnect elsewhere), then
// HTTP (in-flight orders finish). It does not run the background loops
// (Loops): the caller starts them before and stops them after.
func (s *Server) Serve(ctx context.Context, public, admin net.Listener) error {
	var wg sync.WaitGroup
	limited := listener.NewPublic(public, s.listenerConfig())
	// The management port has no caps, but is followed the same way: HTTP
	// clients making requests in parallel keep a connection they dialled
	// for one that another connection served first, unused.
	mgmt := listener.NewPublic(admin, listener.Config{MaxConns: math.MaxInt, Logger: s.log})
	errc := make(chan error, 2)
	wg.Go(func() { errc <- s.public.Listener(limited) })
	wg.Go(func() { errc <- s.admin.Listener(mgmt) })
	s.log.LogAttrs(ctx, slog.LevelInfo, "serving",
		slog.String("public", public.Addr().String()), slog.String("admin", admin.Addr().String()),
		slog.Int("maxConns", s.cfg.Listener.MaxConns), slog.Int("maxConnsPerIP", s.cfg.Listener.PerAddr))

	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		err = fmt.Errorf("server: listener stopped: %w", err)
	}
	s.log.LogAttrs(context.Background(), slog.LevelInfo, "shutting down", slog.Duration("timeout", s.cfg.Shutdown))
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.Shutdown)
	defer cancel()
	// Streams first: each is told to reconnect elsewhere and ends, so the
	// HTTP shutdown below is not held up by them.
	s.hub.Close()
	// Connections that never sent a byte (browsers' and HTTP clients'
	// spare ones) would hold the shutdown up for 5 s (fasthttp counts them
	// idle only then); close them, also ones accepted meanwhile, on both
	// ports until both are shut down.
	sweepCtx, stopSweep := context.WithCancel(context.Background())
	go loop.NowAndEvery(sweepCtx, 50*time.Millisecond, func(context.Context) {
		limited.CloseUnused()
		mgmt.CloseUnused()
	})
	e := s.public.ShutdownWithContext(sctx)
	if e != nil {
		err = errors.Join(err, fmt.Errorf("server: public shutdown: %w", e))
	}
	if s.gw != nil {
		s.gw.Close()
	}
	if e := s.admin.ShutdownWithContext(sctx); e != nil {
		err = errors.Join(err, fmt.Errorf("server: admin shutdown: %w", e))
	}
	stopSweep()
	// fasthttp closes only the listeners its Serve has registered; a stop
	// that comes right after the start could find none. Close them here too.
	_ = limited.Close()
	_ = mgmt.Close()
	// The listeners are closed, so Serve returns at once: it gets a bound
	// of its own, not what the connections left of the shutdown's. (With
	// the shutdown's, connections that closed just inside the timeout made
	// a shutdown that completed report that it timed out, and exit 1.)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(serveReturn):
		err = errors.Join(err, errors.New("server: shutdown timed out (a listener did not stop)"))
	}
	return err
}

// serveReturn bounds the wait for the listeners' Serve to return once
// they are closed.
const serveReturn = 2 * time.Second

// newVisitorID is a new anonymous visitor's identity: visitorPrefix and
// 128 random bits, base64url, so nobody can guess another visitor's.
func newVisitorID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return visitorPrefix + base64.RawURLEncoding.EncodeToString(b)
}
