package compose

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/internal/batch"
	"waitingroom/internal/loop"
	"waitingroom/queue"
	"waitingroom/queue/adaptive"
	"waitingroom/queue/admission"
	"waitingroom/queue/history"
	"waitingroom/queue/members"
	"waitingroom/queue/presence"
	"waitingroom/server"
	"waitingroom/server/access"
	"waitingroom/server/accesslog"
	"waitingroom/server/admin/audit"
	"waitingroom/server/api"
	"waitingroom/server/checkout"
	"waitingroom/server/faults"
	"waitingroom/server/gateway"
	upstream "waitingroom/server/gateway/origin"
	"waitingroom/server/login"
	"waitingroom/server/metrics"
	"waitingroom/server/pass"
	"waitingroom/server/pgstore"
	"waitingroom/server/pow"
	"waitingroom/server/ratelimit"
	"waitingroom/server/ratelimit/local"
	"waitingroom/server/readiness"
	"waitingroom/server/seclog"
	"waitingroom/server/token"
	"waitingroom/stream"
)

// Parts are the instance's components, each built by wire from its own
// configuration (Config) and given its dependencies here: the clients,
// the other components it calls, the logger and the callbacks that feed
// the metrics. Those the HTTP adapters call are the embedded server.Deps,
// handed to server.New as they are (deps); the background loops are the
// components' own (loops).
type Parts struct {
	// Deps: Logger is the instance's, request ids added (api.LogHandler);
	// Limiter shares the queue's batch runner, so the decisions and enters
	// of concurrent requests share round trips; Logins and Checkout (the
	// built-in login and the demo order API) and Definitions are nil
	// without Postgres (Config.UsesPostgres).
	server.Deps
	Recorder *adaptive.Recorder // order signals for adaptive admission
	// Gate is adaptive rooms' pool gate; nil without Postgres or with
	// WR_ADAPTIVE_GATE=off.
	Gate *adaptive.PoolGate
	// Pool is the database pool's figures for the order signals; nil
	// without Postgres (never a nil *pgstore.Store in the interface).
	Pool adaptive.PoolStats
	// RoomRecord is the rooms' durable record (Postgres), configured the
	// rooms WR_ROOMS names: the admin API's. Nil without Postgres.
	RoomRecord *pgstore.Store
}

// wiring is what every component is built on: the configuration, the
// clients and the key prefix of every Redis key (queue.DefaultPrefix when
// empty); p holds the parts built so far.
type wiring struct {
	cfg    Config
	http   server.Config // the HTTP adapters' (Main.serverConfig)
	rdb    redis.UniversalClient
	store  *pgstore.Store // nil without Postgres (Config.UsesPostgres)
	prefix string
	p      *Parts
}

// wire builds the instance's components. It does no I/O: the admission
// loop creates the configured rooms (WR_ROOMS) in Redis, and creates them
// again whenever Redis has lost them.
func wire(w wiring, m *metrics.Metrics, log *slog.Logger) (*Parts, error) {
	w.prefix = cmp.Or(w.prefix, queue.DefaultPrefix)
	w.p = &Parts{Deps: server.Deps{Metrics: m, ConfiguredRooms: w.cfg.Admission.Rooms}, RoomRecord: w.store}
	if w.store != nil {
		// Only with a store: a nil *pgstore.Store in an interface is not nil.
		w.p.Pool, w.p.Definitions = w.store, w.store
	}
	// Lines logged while serving a request carry its id (api.LogHandler).
	w.p.Logger = slog.New(api.LogHandler(log.Handler()))
	w.core()
	w.admission()
	w.streams()
	w.edge()
	if err := w.gateway(); err != nil {
		return nil, err
	}
	return w.p, nil
}

// core builds the queue, the tokens, the limits, the lists and, with
// Postgres, the built-in login.
func (w *wiring) core() {
	p, cfg := w.p, w.cfg
	p.Sec = seclog.New(p.Logger, p.Metrics.SecEvents)
	p.Tokens = token.New(cfg.Tokens)
	// The queue's scripts and the limiter's share round trips (one
	// batch.Runner), as the decisions and enters of concurrent requests do.
	scripts := batch.New(w.rdb)
	qo := cfg.Queue
	qo.Prefix, qo.Batch = w.prefix, scripts
	qo.EnterGuard = ratelimit.InlineLua // the enter limits, decided inside the enter script
	p.Queue = queue.New(w.rdb, qo)
	p.Access = access.New(w.rdb, w.prefix)
	p.Faults = faults.New(w.rdb, w.prefix, cfg.FaultInjection)
	p.Limiter = ratelimit.NewOn(scripts, w.prefix)
	p.Polls = local.New(local.Options{})
	if w.store == nil {
		return // no users to log in
	}
	p.Logins = login.New(login.Options{
		Config: cfg.Login, Store: w.store, Limiter: p.Limiter, Logger: p.Logger,
		OnVerify: func(d time.Duration) { p.Metrics.Bcrypt.Observe(d.Seconds()) },
		OnBusy:   p.Metrics.BcryptBusy.Inc,
	})
}

// admission builds the admission loop, the order use case (with
// Postgres) and adaptive admission (its signals and its controller).
func (w *wiring) admission() {
	p, cfg := w.p, w.cfg
	ao := cfg.Admission
	p.Recorder = adaptive.NewRecorder(w.rdb, p.Queue, cfg.Adaptive.Window)
	// Each run feeds the adaptive signals the room's active count: the
	// instance that runs a room records its concurrency for the controller.
	ao.OnAdmit = func(res queue.AdmitResult) {
		p.Metrics.ObserveAdmission(res)
		p.Recorder.Admission(res.Room, res.Active, res.Waiting, res.Target, time.Now())
	}
	ao.Logger = p.Logger
	// The rooms are shared among the live instances, each run by one;
	// the hub's subscription wakes a room's runner (streams below).
	// An instance is taken for stopped after five missed beats (one a
	// tick), so its rooms move within about five ticks.
	ao.Members = members.New(w.rdb, members.Options{Key: w.prefix + "instances", ID: newInstanceID(),
		Expiry: max(members.DefaultExpiry, 5*cmp.Or(ao.Interval, 100*time.Millisecond))})
	ao.Woken = true
	if w.store != nil {
		ao.Stored = w.store.RoomDefinitions // the admin API's rooms, recreated like WR_ROOMS
	}
	ao.OnRelease = p.Metrics.ForgetRoom // another instance runs the room now: its series are that one's
	ad := cfg.Adaptive
	if w.store != nil && cfg.AdaptiveGate {
		// Adaptive rooms admit tick by tick what the pool has room for;
		// the limit's rule then cuts only when acquires queue anyway.
		p.Gate = adaptive.NewPoolGate(w.store, cmp.Or(ao.Interval, 100*time.Millisecond))
		ao.Gate, ad.Rule.Gate = p.Gate, true
	}
	p.Admitter = admission.New(p.Queue, ao)
	if w.store != nil {
		co := cfg.Checkout
		co.Store, co.Slots, co.Recorder, co.Delay, co.Logger = w.store, p.Queue, p.Recorder, p.Faults.OrderDelay, p.Logger
		co.RowDelay = p.Faults.RowDelay
		p.Checkout = checkout.New(co)
	}
	ad.Rule.Pool = w.store != nil // the capacity rule reads the pool's figures
	ad.Owner = newInstanceID()    // the controller's lease owner: must not collide
	ad.OnStep, ad.OnChange, ad.Logger = p.Metrics.ObserveStep, p.Metrics.ObserveLimitChange, p.Logger
	ad.Running = p.Admitter.Running // the rooms this instance runs
	p.Controller = adaptive.NewController(w.rdb, p.Queue, ad)
}

// streams builds the push hub and what follows it: presence and the
// rooms' history (with the hub's forecasts).
func (w *wiring) streams() {
	p, cfg := w.p, w.cfg
	ho := cfg.Streams
	ho.Source, ho.OnDrop, ho.OnReplace, ho.Logger = p.Queue, p.Metrics.StreamDrops.Inc, p.Metrics.StreamReplaced.Inc, p.Logger
	ho.OnEvent, ho.OnSubscribed = p.Admitter.Wake, p.Admitter.Resweep // the admission's wake-ups
	p.Hub = stream.New(ho)
	p.Presence = presence.New(p.Queue, p.Hub, cfg.Queue.IdleTimeout)
	p.History = history.New(w.rdb, p.Queue, p.Logger).WithForecasts(p.Hub.Forecast).WithJudge(p.Metrics.JudgedETA).
		WithShown(p.Metrics.ShownETA).WithRunning(p.Admitter.Running)
}

// edge builds what the ports keep beside the handlers: the access logs,
// the admin audit log and the readiness checks.
func (w *wiring) edge() {
	p := w.p
	p.AccessPublic = accesslog.New(p.Logger, w.cfg.AccessLog)
	// The management port logs what WR_ACCESS_LOG asks, but for the
	// successes of its scrapes and probes (server.logAccess).
	adminMode := w.cfg.AccessLog
	p.AccessAdmin = accesslog.New(p.Logger, adminMode)
	p.Audit = audit.New(w.rdb, w.prefix)
	rdb := w.rdb
	var pingPostgres func(context.Context) error // none without Postgres
	if w.store != nil {
		pingPostgres = w.store.Ping
	}
	p.Readiness = readiness.New(readiness.Options{
		Redis:    func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
		Postgres: pingPostgres,
		Queue:    p.Queue, Rooms: w.cfg.Admission.Rooms,
		OnDependency: func(name string, up bool) {
			p.Metrics.DependencyUp.WithLabelValues(name).Set(map[bool]float64{true: 1}[up])
		},
		OnMissing: func(n int) { p.Metrics.RoomsMissing.Set(float64(n)) },
	})
}

// gateway builds gateway mode's parts, or nothing when it is off.
func (w *wiring) gateway() error {
	g, p := w.cfg.Gateway, w.p
	if !g.Enabled() {
		return nil
	}
	var up *upstream.Client // none in forward auth
	if g.Upstream.URL != "" {
		var err error
		if up, err = gateway.NewUpstream(g.Upstream); err != nil {
			return fmt.Errorf("WR_UPSTREAM: %w", err)
		}
	}
	passes, err := pass.New(g.Passes)
	if err != nil {
		return err
	}
	base := gateway.Default(cmp.Or(g.Difficulty, pow.DefaultDifficulty))
	if g.Challenge != "" {
		base.Challenge = g.Challenge
	}
	settings := gateway.NewStore(w.rdb, w.prefix, g.Protect, base)
	powKey := sha256.Sum256([]byte("pow:" + w.cfg.Tokens.Secret)) // shared by every instance, like the secret
	p.Gateway = &server.GatewayParts{
		Proxy: gateway.New(gateway.Options{
			Upstream: up, Settings: settings, Slots: p.Queue, Signer: passes, Tokens: p.Tokens,
			Recorder: p.Recorder, Identity: server.GatewayIdentity(w.http, p.Tokens, p.Access),
			Logger: p.Logger, Registerer: p.Metrics.Registry, TrustedProxiesName: "WR_TRUSTED_PROXIES",
		}),
		Settings: settings,
		Passes:   passes,
		PoW:      pow.New(w.rdb, w.prefix, powKey[:], pow.DefaultTTL),
	}
	return nil
}

// deps are the components the HTTP adapters call.
func (p *Parts) deps() server.Deps { return p.Deps }

// loops are the components' background loops. Serve does not start them:
// Main does, with loop.Start before Serve, and stops them after Serve has
// returned, so the shutdown order stays streams, HTTP, the loops, then
// Redis and Postgres.
//
//	admission   creates the configured and stored rooms; admits the rooms
//	            with work that this instance runs, every WR_ADMIT_INTERVAL
//	hub         the pub/sub subscription and the streams' fan-out
//	access      reloads the access lists every second
//	presence    marks the waiting users seen here present in Redis
//	signals     flushes the order signals for adaptive admission
//	controller  steps the adaptive limit of the rooms this instance runs
//	faults      reloads the injected faults twice a second
//	history     records a point of the shared history every second for
//	            each room this instance runs
//	readiness   checks Redis and Postgres (when used) every 5 s
//	            (waitingroom_dependency_up)
//	gateway     reloads the rooms' gateway settings every second (gateway mode)
func (p *Parts) loops() []loop.Loop {
	loops := []loop.Loop{
		{Name: "admission", Run: p.Admitter.Run},
		{Name: "hub", Run: p.Hub.Run},
		{Name: "access", Run: p.Access.Run},
		{Name: "presence", Run: p.Presence.Run},
		{Name: "signals", Run: func(ctx context.Context) { p.Recorder.Run(ctx, p.Pool) }},
		{Name: "controller", Run: p.Controller.Run},
		{Name: "faults", Run: p.Faults.Run},
		{Name: "history", Run: p.History.Run},
		{Name: "readiness", Run: p.Readiness.Run},
	}
	if p.Gateway != nil {
		loops = append(loops, loop.Loop{Name: "gateway", Run: p.Gateway.Settings.Run})
	}
	return loops
}

// newInstanceID is 128 random bits, base64url: a new id this instance goes
// by in Redis (its membership, its leases' owner), which must not collide
// with another instance's; it need not be secret.
func newInstanceID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
