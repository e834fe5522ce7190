package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"waitingroom/queue"
	"waitingroom/queue/adaptive"
	"waitingroom/queue/batch"
	"waitingroom/queue/history"
	"waitingroom/queue/loop"
	"waitingroom/queue/presence"
	"waitingroom/server/access"
	"waitingroom/server/accesslog"
	"waitingroom/server/admin"
	"waitingroom/server/admin/audit"
	"waitingroom/server/api"
	"waitingroom/server/checkout"
	"waitingroom/server/faults"
	"waitingroom/server/gateway"
	"waitingroom/server/listener"
	"waitingroom/server/login"
	"waitingroom/server/pass"
	"waitingroom/server/pgstore"
	"waitingroom/server/pow"
	"waitingroom/server/ratelimit"
	"waitingroom/server/ratelimit/local"
	"waitingroom/server/seclog"
	"waitingroom/server/token"
	"waitingroom/stream"
)

// Store is what the server needs from Postgres.
type Store interface {
	Ping(ctx context.Context) error
	Credentials(ctx context.Context, loginID string) (userID int64, passwordHash []byte, err error)
	Product(ctx context.Context, id int64) (pgstore.Product, error)
	PlaceOrder(ctx context.Context, r pgstore.OrderRequest) (pgstore.Order, error)
}

// Options are the dependencies of a Server.
type Options struct {
	Config Config
	Redis  redis.UniversalClient
	Store  Store
	Logger *slog.Logger
	// KeyPrefix of every Redis key; queue.DefaultPrefix when empty.
	KeyPrefix string
	// Registry receives the server's metrics and is served at /metrics;
	// pass the one the Store registered on. A new one when nil.
	Registry *prometheus.Registry
}

// Server is one app instance: the public API and page, the management
// endpoints, and the background loops it hands to its caller (Loops).
type Server struct {
	cfg      Config
	q        *queue.Queue
	store    Store
	tokens   *token.Issuer
	m        *metrics
	log      *slog.Logger
	public   *fiber.App
	admin    *fiber.App
	admitter *queue.Admitter
	hub      *stream.Hub
	limiter  *ratelimit.Limiter
	polls    *local.Limiter     // the poll pace, in this instance's memory (ratelimits.go)
	sec      *seclog.Log        // security events (package seclog)
	checkout *checkout.Checkout // the order use case
	acl      *access.Lists      // deny, allow and bypass lists
	presence *presence.Presence
	rec      *adaptive.Recorder   // order signals for adaptive admission
	ctl      *adaptive.Controller // the admission limit controller
	faults   *faults.Faults       // injected order delay (WR_FAULT_INJECTION)
	history  *history.History     // the rooms' shared history
	// fwdStreams: open streams per forwarded client address (holdStream).
	fwdStreams listener.Counts
	logins     *login.Login // the login use case
	// Gateway mode (gatewaymode.go); nil and "" when it is off.
	gw         *gateway.Gateway
	gwSettings *gateway.Store
	passes     *pass.Signer
	pow        *pow.Pow
	prefix     string                          // where the page and API live: "" or gateway.Prefix
	pingRedis  func(ctx context.Context) error // /readyz's and the readiness loop's check
	// The ports' access logs (accesslog.go).
	accessPublic, accessAdmin *accesslog.Log
}

// New builds a Server. It does no I/O: the admission loop creates the
// configured rooms (WR_ROOMS) in Redis, and creates them again whenever
// Redis has lost them.
func New(o Options) (*Server, error) {
	if o.Redis == nil || o.Store == nil {
		return nil, errors.New("server: Redis and Store are required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	// Lines logged while serving a request carry its id (api.LogHandler).
	o.Logger = slog.New(api.LogHandler(o.Logger.Handler()))
	if o.Config.Listener.MaxConns <= 0 {
		return nil, errors.New("server: Config.Listener.MaxConns must be positive")
	}
	s := &Server{cfg: o.Config, store: o.Store, m: newMetrics(o.Registry), log: o.Logger}
	s.pingRedis = func(ctx context.Context) error { return o.Redis.Ping(ctx).Err() }
	s.sec = seclog.New(o.Logger, s.m.secEvents)
	s.newAccessLogs()
	s.tokens = token.New(o.Config.Tokens)
	// The queue's scripts and the limiter's share round trips (one
	// batch.Runner), as the decisions and enters of concurrent requests do.
	scripts := batch.New(o.Redis)
	qo := o.Config.Queue
	qo.Prefix, qo.Batch = o.KeyPrefix, scripts
	qo.EnterGuard = ratelimit.InlineLua // the enter limits, decided inside the enter script
	s.q = queue.New(o.Redis, qo)
	prefix := o.KeyPrefix
	if prefix == "" {
		prefix = queue.DefaultPrefix
	}
	s.acl = access.New(o.Redis, prefix)
	s.faults = faults.New(o.Redis, prefix, o.Config.FaultInjection)
	s.limiter = ratelimit.NewOn(scripts, prefix)
	s.polls = local.New(local.Options{})
	s.logins = s.newLogin(o)
	s.admitter = s.newAdmitter()
	s.rec = adaptive.NewRecorder(o.Redis, s.q, o.Config.Adaptive.Window)
	co := o.Config.Checkout
	co.Store, co.Slots, co.Recorder, co.Delay, co.Logger = o.Store, s.q, s.rec, s.faults.OrderDelay, o.Logger
	s.checkout = checkout.New(co)
	s.ctl = s.newController(o)
	ho := o.Config.Streams
	ho.Source, ho.OnDrop, ho.OnReplace, ho.Logger = s.q, s.m.streamDrops.Inc, s.m.streamRepl.Inc, o.Logger
	s.hub = stream.New(ho)
	s.presence = presence.New(s.q, s.hub, o.Config.Queue.IdleTimeout)
	s.history = history.New(o.Redis, s.q, o.Logger).WithForecasts(s.hub.Forecast).WithJudge(s.m.judgedETA)
	if s.cfg.Listener.PerAddr == 0 {
		s.cfg.Listener.PerAddr = listener.PerAddressCap(s.cfg.Listener.MaxConns)
	}
	for _, reason := range []string{listener.RefusedCeiling, listener.RefusedAddress} {
		s.m.connRefused.WithLabelValues(reason) // present at 0 from the start
	}
	if err := s.newGateway(o, prefix); err != nil {
		return nil, err
	}
	s.public = s.newPublicApp()
	// Outermost, before Fiber's routing: every complete request, whatever
	// its route, lifts its connection's first-request deadline.
	s.public.Server().Handler = markServed(s.public.Server().Handler)
	s.admin = s.newAdminApp(o, prefix)
	return s, nil
}

// newAdminApp builds the management app (package admin) over the server's
// queue, controller, lists, faults and history, with the audit log under
// the key prefix.
func (s *Server) newAdminApp(o Options, prefix string) *fiber.App {
	return admin.New(admin.Options{
		Token:        s.cfg.AdminToken,
		BodyLimit:    s.cfg.BodyLimit,
		Logger:       s.log,
		Sec:          s.sec,
		Guard:        s.guardProtocol,
		Metrics:      s.m.reg,
		Queue:        s.q,
		Controller:   s.ctl,
		Rule:         s.cfg.Adaptive.Rule,
		Window:       s.cfg.Adaptive.Window,
		Access:       s.acl,
		Faults:       s.faults,
		Gateway:      s.gwSettings,
		RoomDefaults: s.cfg.Admission.Defaults,
		History:      s.history,
		Audit:        audit.New(o.Redis, prefix),
		Forecast:     s.hub.Forecast,
		PingRedis:    s.pingRedis,
		PingPostgres: o.Store.Ping,
		CheckRooms:   s.checkRooms,
		ClientKey:    s.clientKey,
		ClientIP:     s.clientIP,
	})
}

// newLogin builds the login use case from its configuration.
func (s *Server) newLogin(o Options) *login.Login {
	return login.New(login.Options{
		Config: o.Config.Login,
		Store:  o.Store, Limiter: s.limiter, Logger: o.Logger,
		OnVerify: func(d time.Duration) { s.m.bcrypt.Observe(d.Seconds()) },
		OnBusy:   s.m.bcryptBusy.Inc,
	})
}

// newAdmitter builds the admission loop from its configuration, reporting
// every run to the metrics.
func (s *Server) newAdmitter() *queue.Admitter {
	ao := s.cfg.Admission
	ao.OnAdmit, ao.Logger = s.observeAdmission, s.log
	return s.q.NewAdmitter(ao)
}

// newController builds the adaptive limit controller from its
// configuration, reporting its steps and changes to the metrics.
func (s *Server) newController(o Options) *adaptive.Controller {
	ao := o.Config.Adaptive
	ao.Owner = randomID()
	ao.OnStep = s.observeStep
	ao.OnChange = func(room string, st adaptive.Step) { s.m.limitChanges.WithLabelValues(room, st.Reason).Inc() }
	ao.Logger = o.Logger
	return adaptive.NewController(o.Redis, s.q, ao)
}

// Public returns the public app (API and page).
func (s *Server) Public() *fiber.App { return s.public }

// Admin returns the management app.
func (s *Server) Admin() *fiber.App { return s.admin }

// Hub returns the server's push hub.
func (s *Server) Hub() *stream.Hub { return s.hub }

// Queue returns the server's queue model.
func (s *Server) Queue() *queue.Queue { return s.q }

// Metrics exposes the server's metrics registry (tests and embedding).
func (s *Server) Metrics() prometheus.Gatherer { return s.m.reg }

// EnsureRooms creates the configured rooms (WR_ROOMS) unless they exist.
func (s *Server) EnsureRooms(ctx context.Context) error {
	for _, room := range s.cfg.Admission.Rooms {
		if err := s.q.EnsureRoom(ctx, room, s.cfg.Admission.Defaults); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) observeAdmission(r queue.AdmitResult) {
	s.m.waiting.WithLabelValues(r.Room).Set(float64(r.Waiting))
	s.m.active.WithLabelValues(r.Room).Set(float64(r.Active))
	s.m.target.WithLabelValues(r.Room).Set(float64(r.Target))
	s.m.limit.WithLabelValues(r.Room).Set(float64(r.Target))
	s.m.paused.WithLabelValues(r.Room).Set(map[bool]float64{true: 1}[r.Paused])
	if n := len(r.Admitted); n > 0 {
		s.m.admitted.WithLabelValues(r.Room).Add(float64(n))
	}
	if r.Pruned > 0 {
		s.m.expired.WithLabelValues(r.Room).Add(float64(r.Pruned))
	}
	if r.Abandoned > 0 {
		s.m.abandoned.WithLabelValues(r.Room).Add(float64(r.Abandoned))
	}
}

// Run listens on the configured addresses and serves until ctx is done
// (Serve; the loops are the caller's).
func (s *Server) Run(ctx context.Context) error {
	pub, err := net.Listen("tcp", s.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("server: listen WR_HTTP_ADDR %s: %w", s.cfg.HTTPAddr, err)
	}
	adm, err := net.Listen("tcp", s.cfg.AdminAddr)
	if err != nil {
		pub.Close()
		return fmt.Errorf("server: listen WR_ADMIN_ADDR %s: %w", s.cfg.AdminAddr, err)
	}
	return s.Serve(ctx, pub, adm)
}

// Serve serves the public and management apps on the given listeners until
// ctx is done or a listener fails; then it shuts down within
// WR_SHUTDOWN_TIMEOUT: streams first (told to reconnect elsewhere), then
// HTTP (in-flight orders finish). It does not run the background loops
// (Loops): the caller starts them before and stops them after.
func (s *Server) Serve(ctx context.Context, public, admin net.Listener) error {
	admin = listener.GuardHeaderLines(admin)
	var wg sync.WaitGroup
	limited := listener.NewPublic(public, s.listenerConfig())
	errc := make(chan error, 2)
	wg.Go(func() { errc <- s.public.Listener(limited) })
	wg.Go(func() { errc <- s.admin.Listener(admin) })
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
	// Connections that never sent a byte (browsers' spare ones) would hold
	// the shutdown up for seconds; close them, also ones accepted meanwhile.
	sweepCtx, stopSweep := context.WithCancel(context.Background())
	go loop.NowAndEvery(sweepCtx, 50*time.Millisecond, func(context.Context) { limited.CloseUnused() })
	e := s.public.ShutdownWithContext(sctx)
	stopSweep()
	if e != nil {
		err = errors.Join(err, fmt.Errorf("server: public shutdown: %w", e))
	}
	if s.gw != nil {
		s.gw.Close()
	}
	if e := s.admin.ShutdownWithContext(sctx); e != nil {
		err = errors.Join(err, fmt.Errorf("server: admin shutdown: %w", e))
	}
	// fasthttp closes only the listeners its Serve has registered; a stop
	// that comes right after the start could find none. Close them here too.
	_ = limited.Close()
	_ = admin.Close()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-sctx.Done():
		err = errors.Join(err, errors.New("server: shutdown timed out"))
	}
	return err
}

// randomID is 128 random bits, base64url: ids nobody can guess (visitors)
// or that must not collide (the controller's lease owner).
func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
