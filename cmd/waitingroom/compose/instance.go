package compose

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"waitingroom/internal/loop"
	"waitingroom/server"
	"waitingroom/server/listener"
	"waitingroom/server/metrics"
	"waitingroom/server/pgstore"
)

// Main is one instance, composed here from its configuration and
// supervised here: Open connects Redis and Postgres, builds the components
// (wire), hands the HTTP adapters those they call (server.New) and starts
// the components' background loops (Parts.loops); Run serves until the
// context is done, then shuts the streams and HTTP down (server.Serve);
// Close stops the loops, then closes Redis and Postgres. That is the
// shutdown order: streams first, then HTTP, then the loops, then Redis and
// Postgres.
type Main struct {
	Config Config
	Log    *slog.Logger
	// Redis, when set, is used instead of a client opened from the
	// configuration, and Close leaves it open (the tests share one).
	Redis redis.UniversalClient
	// KeyPrefix of every Redis key; queue.DefaultPrefix when empty (the
	// tests give each test a prefix of its own).
	KeyPrefix string

	rdb       redis.UniversalClient
	store     *pgstore.Store
	parts     *Parts
	srv       *server.Server
	stopLoops func(context.Context) error
}

// Open connects Redis and Postgres (within 30 s; Postgres only when
// Config.UsesPostgres), builds the components
// and the server, and starts the loops. After an error, Close releases
// what was opened.
func (m *Main) Open(ctx context.Context) error {
	if m.Redis != nil {
		m.rdb = m.Redis
	} else {
		rdb, err := OpenRedis(m.Config)
		if err != nil {
			return err
		}
		m.rdb = rdb
	}
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	reg := prometheus.NewRegistry()
	m.checkRedis(octx)
	if m.Config.UsesPostgres() {
		store, err := pgstore.Open(octx, m.Config.DatabaseURL, pgstore.Options{PoolSize: m.Config.DBPool, Logger: m.Log, Registerer: reg})
		if err != nil {
			return fmt.Errorf("DATABASE_URL: %w", err)
		}
		m.store = store
		m.Log.LogAttrs(ctx, slog.LevelInfo, "postgres: connected", slog.Int("dbPool", int(m.Config.DBPool)))
	} else {
		m.Log.LogAttrs(ctx, slog.LevelWarn, "gateway mode without DATABASE_URL: Redis alone, no built-in login or order API; "+
			"rooms made or changed through the admin API are not recorded, so after a Redis data loss only the WR_ROOMS rooms come back, with the configured defaults")
	}
	srvCfg, err := m.serverConfig()
	if err != nil {
		return err
	}
	parts, err := wire(wiring{cfg: m.Config, http: srvCfg, rdb: m.rdb, store: m.store, prefix: m.KeyPrefix}, metrics.New(reg, m.Config.Metrics), m.Log)
	if err != nil {
		return err
	}
	srv, err := server.New(parts.deps(), srvCfg)
	if err != nil {
		return err
	}
	m.parts, m.srv = parts, srv
	m.checkOrigin(octx)
	// The configured and stored rooms exist before the loops start and
	// the server serves (a Redis that cannot be reached yet: the loops
	// try again).
	pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
	parts.Admitter.Prepare(pctx)
	pcancel()
	m.stopLoops = loop.Start(parts.loops())
	return nil
}

// checkRedis asks Redis once at start: "redis: connected" only after a
// reply; no reply is a warning naming REDIS_URL (and the topology's
// variables), not a failure: the loops and requests retry, and the
// instance answers 503 until Redis does.
func (m *Main) checkRedis(ctx context.Context) {
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	kind := m.Config.Redis.Kind()
	if err := m.rdb.Ping(pctx).Err(); err != nil {
		vars := map[string]string{"single": "REDIS_URL", "sentinel": "WR_REDIS_SENTINELS, WR_REDIS_MASTER and REDIS_URL",
			"cluster": "WR_REDIS_CLUSTER and REDIS_URL"}[kind]
		m.Log.LogAttrs(ctx, slog.LevelWarn, "redis: no answer at start, check "+vars+" (retrying; answering 503 until it does)",
			slog.String("redis", kind), slog.String("tried", m.redisAddr()), slog.String("error", err.Error()))
		return
	}
	m.Log.LogAttrs(ctx, slog.LevelInfo, "redis: connected", slog.String("redis", kind), slog.String("addr", m.redisAddr()))
}

// redisAddr is where the instance looks for Redis, without credentials.
func (m *Main) redisAddr() string {
	t := m.Config.Redis
	switch t.Kind() {
	case "cluster":
		return strings.Join(t.Cluster, ",")
	case "sentinel":
		return strings.Join(t.Sentinels, ",") + " (master " + t.Master + ")"
	}
	if o, err := redis.ParseURL(m.Config.RedisURL); err == nil {
		return o.Addr
	}
	return "?"
}

// checkOrigin asks gateway mode's origin once at start (a connection):
// none is a warning naming WR_UPSTREAM and the address tried, not a
// failure (visitors still queue; /readyz's origin check keeps saying).
func (m *Main) checkOrigin(ctx context.Context) {
	g := m.parts.Gateway
	if g == nil || g.Proxy.ForwardAuth() {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := g.Proxy.Probe(pctx); err != nil {
		m.Log.LogAttrs(ctx, slog.LevelWarn, "origin: no connection at start, check WR_UPSTREAM (visitors still queue; every request for the origin answers 502 until it does)",
			slog.String("upstream", m.Config.Gateway.Upstream.URL), slog.String("tried", g.Proxy.Origin()), slog.String("error", err.Error()))
		return
	}
	m.Log.LogAttrs(ctx, slog.LevelInfo, "origin: reachable", slog.String("upstream", m.Config.Gateway.Upstream.URL))
}

// Run listens on WR_HTTP_ADDR and WR_ADMIN_ADDR and serves until ctx is
// done; it returns once the streams and HTTP have shut down. A failure to
// listen names the variable of the address.
func (m *Main) Run(ctx context.Context) error {
	err := m.srv.Run(ctx)
	var le *server.ListenError
	if errors.As(err, &le) {
		return fmt.Errorf("%s: %w", listenVars[le.Field], err)
	}
	return err
}

// listenVars are the variables of server.Config's addresses.
var listenVars = map[string]string{"HTTPAddr": "WR_HTTP_ADDR", "AdminAddr": "WR_ADMIN_ADDR"}

// Serve is Run on listeners of the caller's (the tests' loopback ports).
func (m *Main) Serve(ctx context.Context, public, admin net.Listener) error {
	return m.srv.Serve(ctx, public, admin)
}

// Server is the instance's server, once Open has succeeded.
func (m *Main) Server() *server.Server { return m.srv }

// Parts are the instance's components, once Open has succeeded.
func (m *Main) Parts() *Parts { return m.parts }

// Store is the instance's Postgres store, opened by Open; nil on Redis
// alone (Config.UsesPostgres).
func (m *Main) Store() *pgstore.Store { return m.store }

// Close stops the loops (waiting at most WR_SHUTDOWN_TIMEOUT for them),
// then closes Postgres and Redis. It closes only what Open opened.
func (m *Main) Close() error {
	var err error
	if m.stopLoops != nil {
		ctx, cancel := context.WithTimeout(context.Background(), m.Config.Server.Shutdown)
		err = m.stopLoops(ctx)
		cancel()
	}
	if m.store != nil {
		m.store.Close()
	}
	if m.rdb != nil && m.Redis == nil {
		_ = m.rdb.Close()
	}
	return err
}

// serverConfig is the HTTP adapters' configuration with what only the
// composition root knows filled in: the connection ceiling, when
// WR_MAX_CONNS leaves it to be derived from the descriptor limit less what
// the instance's own clients hold — the database pool, Redis's pools, the
// management port and a few files.
func (m *Main) serverConfig() (server.Config, error) {
	c := m.Config.Server
	if c.Listener.MaxConns == 0 {
		db := 0
		if m.Config.UsesPostgres() {
			db = int(m.Config.DBPool)
		}
		ceiling, err := listener.Ceiling(db + m.Config.Redis.descriptors() + 16)
		if err != nil {
			return c, err
		}
		c.Listener.MaxConns = ceiling
	}
	return c, nil
}
