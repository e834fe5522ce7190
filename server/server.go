package server

import (
	"context"
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
	"waitingroom/queue/loop"
	"waitingroom/queue/presence"
	"waitingroom/server/access"
	"waitingroom/server/admin"
	"waitingroom/server/checkout"
	"waitingroom/server/faults"
	"waitingroom/server/listener"
	"waitingroom/server/login"
	"waitingroom/server/pgstore"
	"waitingroom/server/ratelimit"
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
	sec      *seclog.Log        // security events (package seclog)
	checkout *checkout.Checkout // the order use case
	acl      *access.Lists      // deny, allow and bypass lists
	presence *presence.Presence
	rec      *adaptive.Recorder   // order signals for adaptive admission
	ctl      *adaptive.Controller // the admission limit controller
	faults   *faults.Faults       // injected order delay (WR_FAULT_INJECTION)
	// fwdStreams: open streams per forwarded client address (holdStream).
	fwdStreams listener.Counts
	logins     *login.Login // the login use case
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
	s := &Server{
		cfg:    o.Config,
		q:      queue.New(o.Redis, queue.Options{Prefix: o.KeyPrefix, IdleTimeout: o.Config.IdleTimeout}),
		store:  o.Store,
		tokens: token.New(token.Config{Secret: o.Config.JWTSecret, Previous: o.Config.JWTPrevious}),
		m:      newMetrics(o.Registry),
		log:    o.Logger,
	}
	s.sec = seclog.New(o.Logger, s.m.secEvents)
	prefix := o.KeyPrefix
	if prefix == "" {
		prefix = queue.DefaultPrefix
	}
	s.acl = access.New(o.Redis, prefix)
	s.faults = faults.New(o.Redis, prefix, o.Config.FaultInjection)
	s.limiter = ratelimit.New(o.Redis, prefix+"rl:")
	s.logins = s.newLogin(o)
	s.admitter = s.q.NewAdmitter(queue.AdmitterOptions{
		Interval: o.Config.AdmitEvery,
		OnAdmit:  s.observeAdmission,
		Rooms:    o.Config.Rooms,
		Defaults: s.roomDefaults(),
		Logger:   o.Logger,
	})
	s.rec = adaptive.NewRecorder(o.Redis, s.q, o.Config.AdaptiveWindow)
	s.checkout = checkout.New(checkout.Options{
		Store: o.Store, Slots: s.q, Recorder: s.rec, Timeout: o.Config.OrderTimeout,
		Delay: s.faults.OrderDelay, Logger: o.Logger,
	})
	s.ctl = adaptive.NewController(o.Redis, s.q, adaptive.Options{
		Window:   o.Config.AdaptiveWindow,
		Rule:     s.limitRule(),
		Owner:    randomHex(8),
		OnStep:   s.observeStep,
		OnChange: func(room string, st adaptive.Step) { s.m.limitChanges.WithLabelValues(room, st.Reason).Inc() },
		Logger:   o.Logger,
	})
	s.hub = stream.New(stream.Options{
		Source:     s.q,
		OnDrop:     s.m.streamDrops.Inc,
		MaxPerUser: o.Config.MaxStreamsPerUser,
		OnReplace:  s.m.streamRepl.Inc,
		Logger:     o.Logger,
	})
	s.presence = presence.New(s.q, s.hub, o.Config.IdleTimeout)
	if s.cfg.MaxConns == 0 {
		// the database pool, Redis's, the management port and a few files
		ceiling, err := listener.Ceiling(int(s.cfg.DBPool) + s.cfg.Redis.descriptors() + 16)
		if err != nil {
			return nil, err
		}
		s.cfg.MaxConns = ceiling
	}
	if s.cfg.MaxConnsPerIP == 0 {
		s.cfg.MaxConnsPerIP = listener.PerAddressCap(s.cfg.MaxConns)
	}
	for _, reason := range []string{listener.RefusedCeiling, listener.RefusedAddress} {
		s.m.connRefused.WithLabelValues(reason) // present at 0 from the start
	}
	s.public = s.newPublicApp()
	// Outermost, before Fiber's routing: every complete request, whatever
	// its route, lifts its connection's first-request deadline.
	s.public.Server().Handler = markServed(s.public.Server().Handler)
	s.admin = s.newAdminApp(o)
	return s, nil
}

// newAdminApp builds the management app (package admin) over the server's
// queue, controller, lists and faults.
func (s *Server) newAdminApp(o Options) *fiber.App {
	return admin.New(admin.Options{
		Token:        s.cfg.AdminToken,
		BodyLimit:    s.cfg.BodyLimit,
		Logger:       s.log,
		Sec:          s.sec,
		Guard:        s.guardProtocol,
		Metrics:      s.m.reg,
		Queue:        s.q,
		Controller:   s.ctl,
		Rule:         s.limitRule(),
		Window:       s.cfg.AdaptiveWindow,
		Access:       s.acl,
		Faults:       s.faults,
		RoomDefaults: s.roomDefaults(),
		PingRedis:    func(ctx context.Context) error { return o.Redis.Ping(ctx).Err() },
		PingPostgres: o.Store.Ping,
		ClientKey:    s.clientKey,
		ClientIP:     s.clientIP,
	})
}

// newLogin builds the login use case from the server's configuration.
func (s *Server) newLogin(o Options) *login.Login {
	lim := o.Config.Limits
	return login.New(login.Options{
		Config: login.Config{
			BcryptCost: o.Config.BcryptCost, BcryptConcurrency: o.Config.BcryptConcurrency,
			AttemptsIP: lim.LoginAttemptsIP, IP: lim.LoginIP, Pair: lim.LoginPair, ID: lim.LoginID,
		},
		Store: o.Store, Limiter: s.limiter, Logger: o.Logger,
		OnVerify: func(d time.Duration) { s.m.bcrypt.Observe(d.Seconds()) },
		OnBusy:   s.m.bcryptBusy.Inc,
	})
}

// Public returns the public app (API and page).
func (s *Server) Public() *fiber.App { return s.public }

// Hub returns the server's push hub.
func (s *Server) Hub() *stream.Hub { return s.hub }

// Queue returns the server's queue model.
func (s *Server) Queue() *queue.Queue { return s.q }

// Metrics exposes the server's metrics registry (tests and embedding).
func (s *Server) Metrics() prometheus.Gatherer { return s.m.reg }

func (s *Server) roomDefaults() queue.RoomConfig {
	return queue.RoomConfig{Target: s.cfg.TargetActive, EntryTTL: s.cfg.EntryTTL}
}

// EnsureRooms creates the configured rooms (WR_ROOMS) unless they exist.
func (s *Server) EnsureRooms(ctx context.Context) error {
	for _, room := range s.cfg.Rooms {
		if err := s.q.EnsureRoom(ctx, room, s.roomDefaults()); err != nil {
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
		slog.Int("maxConns", s.cfg.MaxConns), slog.Int("maxConnsPerIP", s.cfg.MaxConnsPerIP),
		slog.String("redis", s.cfg.Redis.Kind()))

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
