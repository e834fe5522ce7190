package compose

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"waitingroom/queue"
	"waitingroom/queue/adaptive"
	"waitingroom/queue/admission"
	"waitingroom/queue/presence"
	"waitingroom/server"
	"waitingroom/server/access"
	"waitingroom/server/accesslog"
	"waitingroom/server/admin"
	"waitingroom/server/checkout"
	"waitingroom/server/gateway"
	upstream "waitingroom/server/gateway/origin"
	"waitingroom/server/listener"
	"waitingroom/server/login"
	"waitingroom/server/metrics"
	"waitingroom/server/pass"
	"waitingroom/server/pow"
	"waitingroom/server/queuestatus"
	"waitingroom/server/ratelimit"
	"waitingroom/server/token"
	"waitingroom/stream"
)

// Config is the instance's whole configuration, read from the environment
// (12-factor) by LoadConfig: the clients' settings, the HTTP adapters'
// (server.Config), and each component's own, in that component's own type
// (wire.go builds the components from them).
type Config struct {
	RedisURL string // REDIS_URL, default "redis://127.0.0.1:6379/0"
	// Redis is the topology OpenRedis connects to; see RedisTopology.
	Redis RedisTopology
	// DatabaseURL is DATABASE_URL, by default the local demo database
	// (defaultDatabaseURL) — except in gateway mode, where DATABASE_URL
	// unset is "": the instance runs on Redis alone (UsesPostgres).
	DatabaseURL string
	DBPool      int32 // WR_DB_POOL (40)
	Dev         bool  // WR_DEV=1: generated JWT secret and admin token, with a warning
	Log         LogConfig
	Server      server.Config

	// The components' configurations. Their option structs carry settings
	// only here: wire sets the dependencies (clients, callbacks, the
	// logger) when it builds them.
	Tokens token.Config  // WR_JWT_SECRET, WR_JWT_SECRET_PREVIOUS
	Login  login.Config  // WR_BCRYPT_COST, WR_BCRYPT_CONCURRENCY, WR_LIMIT_LOGIN_*
	Queue  queue.Options // WR_IDLE_TIMEOUT (the key prefix is Main.KeyPrefix)
	// Admission: WR_ADMIT_INTERVAL, WR_ROOMS, and the new rooms' defaults
	// WR_TARGET_ACTIVE and WR_ENTRY_TTL.
	Admission admission.Options
	Streams   stream.Options   // WR_MAX_STREAMS_PER_USER
	Checkout  checkout.Options // WR_ORDER_TIMEOUT
	// Adaptive: WR_ADAPTIVE_WINDOW, and the rule's WR_ADAPTIVE_MIN,
	// WR_ADAPTIVE_MAX, WR_ADAPTIVE_MIN_SAMPLES, WR_ADAPTIVE_P90_CEILING.
	Adaptive adaptive.Options
	// AdaptiveGate (WR_ADAPTIVE_GATE, default on): adaptive rooms'
	// admissions pass the pool gate (adaptive.PoolGate) in server mode.
	AdaptiveGate   bool
	FaultInjection bool // WR_FAULT_INJECTION: PUT /admin/faults allowed
	// Gateway: WR_UPSTREAM (off when empty) or WR_FORWARD_AUTH,
	// WR_UPSTREAM_CONNECT_TIMEOUT, WR_UPSTREAM_TIMEOUT,
	// WR_UPSTREAM_BODY_LIMIT, WR_PROTECT, WR_PASS_KEY,
	// WR_PASS_KEY_PREVIOUS, WR_GATEWAY_CHALLENGE, WR_POW_DIFFICULTY.
	Gateway GatewayConfig
	// AccessLog (WR_ACCESS_LOG): which requests get an access line; the
	// zero value is accesslog.Errors.
	AccessLog accesslog.Mode
	// Metrics bound the per-room series: WR_METRICS_ROOM_QUIET,
	// WR_METRICS_MAX_ROOMS.
	Metrics metrics.Options
}

// GatewayConfig is gateway mode's configuration; Upstream.URL empty and
// ForwardAuth false: off.
type GatewayConfig struct {
	Upstream upstream.Config
	// ForwardAuth (WR_FORWARD_AUTH=on): the site's own proxy asks
	// /_wr/auth about each request and the instance forwards nothing
	// (package gateway, forwardauth.go); it excludes WR_UPSTREAM.
	ForwardAuth bool
	Protect     []gateway.Route // WR_PROTECT
	Passes      pass.Config     // WR_PASS_KEY, WR_PASS_KEY_PREVIOUS
	// Challenge and Difficulty (WR_GATEWAY_CHALLENGE, WR_POW_DIFFICULTY)
	// are the proof of work of a room whose settings nobody changed.
	Challenge  string
	Difficulty int
}

// Enabled reports whether gateway mode is on: as the origin's reverse
// proxy (WR_UPSTREAM) or as its proxy's forward auth.
func (g GatewayConfig) Enabled() bool { return g.Upstream.URL != "" || g.ForwardAuth }

// UsesPostgres reports whether the instance opens Postgres: always, but
// in gateway mode with DATABASE_URL unset. Postgres holds the built-in
// login's users, the demo order API's products and orders, the pool
// figures of the adaptive signals and the room definitions the admin API
// records; a gateway without it has no login and no orders (its visitors
// are anonymous, its orders the origin's), and its rooms live in Redis
// alone: those of WR_ROOMS are created again after a Redis data loss,
// those made through the admin API are not.
func (c Config) UsesPostgres() bool { return c.DatabaseURL != "" }

// defaultDatabaseURL is DATABASE_URL's default: the local demo database.
const defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/waitingroom?sslmode=disable"

// SeedConfig is what the seed command reads: the database and the BCrypt
// cost of the hash it stores — no secret, no address, nothing else.
type SeedConfig struct {
	DatabaseURL string // DATABASE_URL
	BcryptCost  int    // WR_BCRYPT_COST
}

// LoadSeedConfig reads the seed command's configuration.
func LoadSeedConfig(getenv func(string) string) (SeedConfig, error) {
	p := envParser{getenv: getenv}
	c := SeedConfig{DatabaseURL: p.str("DATABASE_URL", defaultDatabaseURL), BcryptCost: p.bcryptCost()}
	return c, p.err
}

// bcryptCost reads WR_BCRYPT_COST (10; 4 to 31).
func (p *envParser) bcryptCost() int { return int(p.int("WR_BCRYPT_COST", 10, 4, 31)) }

// MinAdminTokenLen is the shortest WR_ADMIN_TOKEN accepted, in bytes.
const MinAdminTokenLen = 16

// ConfigError names the variable that is wrong.
type ConfigError struct {
	Var, Value, Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("config: %s=%q: %s", e.Var, e.Value, e.Reason)
}

// LoadConfig reads the configuration through getenv (os.Getenv in main).
// The first invalid variable fails with a *ConfigError naming it.
func LoadConfig(getenv func(string) string) (Config, error) {
	p := envParser{getenv: getenv}
	c := Config{
		RedisURL:    p.str("REDIS_URL", "redis://127.0.0.1:6379/0"),
		DatabaseURL: p.str("DATABASE_URL", defaultDatabaseURL),
		DBPool:      int32(p.int("WR_DB_POOL", 40, 1, 10_000)),
		Dev:         p.flag("WR_DEV"),
	}
	c.Redis = p.redisTopology(c.RedisURL)
	c.Server = server.Config{
		HTTPAddr:     p.str("WR_HTTP_ADDR", ":8080"),
		AdminAddr:    p.str("WR_ADMIN_ADDR", "127.0.0.1:8081"),
		AdminToken:   getenv("WR_ADMIN_TOKEN"),
		BodyLimit:    int(p.int("WR_BODY_LIMIT", 16<<10, 1<<10, 16<<20)),
		Shutdown:     p.duration("WR_SHUTDOWN_TIMEOUT", 15*time.Second, time.Second, 10*time.Minute),
		CookieSecure: p.flag("WR_COOKIE_SECURE"),
		MaxQuantity:  int(p.int("WR_MAX_QUANTITY", 10, 1, 1_000_000)),
		AccessTTL:    p.duration("WR_ACCESS_TTL", time.Hour, time.Minute, 30*24*time.Hour),
		QueueTTL:     p.duration("WR_QUEUE_TTL", 6*time.Hour, time.Minute, 7*24*time.Hour),
		Names:        settingNames,
	}
	c.Tokens = token.Config{Secret: getenv("WR_JWT_SECRET"), Previous: getenv("WR_JWT_SECRET_PREVIOUS")}
	c.Queue = queue.Options{IdleTimeout: p.durationOrZero("WR_IDLE_TIMEOUT", 5*time.Minute, 5*time.Second, 24*time.Hour)}
	c.Checkout = checkout.Options{Timeout: p.duration("WR_ORDER_TIMEOUT", 5*time.Second, 100*time.Millisecond, 5*time.Minute)}
	c.Log = p.logs()
	c.AccessLog = p.accessLog()
	c.Metrics = metrics.Options{
		QuietAfter: p.duration("WR_METRICS_ROOM_QUIET", metrics.DefaultQuietAfter, time.Minute, 24*time.Hour),
		MaxRooms:   int(p.int("WR_METRICS_MAX_ROOMS", metrics.DefaultMaxRooms, 1, 1_000_000)),
	}
	p.connections(&c)
	p.layer1(&c.Server)
	p.login(&c)
	p.admission(&c)
	p.adaptive(&c)
	p.gateway(&c)
	if c.Gateway.Enabled() && strings.TrimSpace(getenv("DATABASE_URL")) == "" {
		c.DatabaseURL = "" // a pure gateway: Redis alone (UsesPostgres)
	}
	p.secrets(&c)
	return c, p.err
}

// settingNames are the variables that answers of the HTTP adapters name
// when they ask the operator to change a setting (server.Names); forward
// auth's refusal of an untrusted proxy names WR_TRUSTED_PROXIES (wire.go).
var settingNames = server.Names{
	Admin: admin.Names{Token: "WR_ADMIN_TOKEN", Rooms: "WR_ROOMS", Upstream: "WR_UPSTREAM",
		Protect: "WR_PROTECT", FaultInjection: "WR_FAULT_INJECTION"},
	ForwardAuth: "WR_FORWARD_AUTH",
}

// Logs: WR_LOG_LEVEL, WR_LOG_FORMAT and WR_ACCESS_LOG.

// LogConfig is how the instance logs (NewLogger).
type LogConfig struct {
	Level slog.Level // WR_LOG_LEVEL: debug, info (default), warn or error
	// Format (WR_LOG_FORMAT) is "text", "json", or "" when unset: text
	// when stderr is a terminal (a person reads it), else JSON (a
	// collector does).
	Format string
}

// LoadLogConfig reads the log settings alone: main sets the logger up
// with them before any command runs (serve's LoadConfig reads them again).
func LoadLogConfig(getenv func(string) string) (LogConfig, error) {
	p := envParser{getenv: getenv}
	c := p.logs()
	return c, p.err
}

// NewLogger is the instance's logger on w: WR_LOG_LEVEL's level, and
// WR_LOG_FORMAT's format — when unset, text on a terminal, else JSON.
func NewLogger(w io.Writer, c LogConfig, terminal bool) *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.Level}
	if c.Format == "json" || c.Format == "" && !terminal {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func (p *envParser) logs() LogConfig {
	var c LogConfig
	switch v := strings.ToLower(p.str("WR_LOG_LEVEL", "info")); v {
	case "debug":
		c.Level = slog.LevelDebug
	case "info":
		c.Level = slog.LevelInfo
	case "warn":
		c.Level = slog.LevelWarn
	case "error":
		c.Level = slog.LevelError
	default:
		p.fail("WR_LOG_LEVEL", v, "want debug, info, warn or error")
	}
	switch v := strings.ToLower(p.str("WR_LOG_FORMAT", "")); v {
	case "", "text", "json":
		c.Format = v
	default:
		p.fail("WR_LOG_FORMAT", v, "want text or json (unset: text on a terminal, else json)")
	}
	return c
}

// accessLog reads WR_ACCESS_LOG (off, errors or all; errors by default).
func (p *envParser) accessLog() accesslog.Mode {
	v := strings.ToLower(p.str("WR_ACCESS_LOG", "errors"))
	m, err := accesslog.ParseMode(v)
	if err != nil {
		p.fail("WR_ACCESS_LOG", v, err.Error())
	}
	return m
}

// connections reads the connection caps and the push transports. A
// MaxConns of 0 (derived from the descriptor limit) is resolved by Main.
func (p *envParser) connections(cfg *Config) {
	c := &cfg.Server
	c.Listener = listener.Config{
		MaxConns:     int(p.int("WR_MAX_CONNS", 0, 0, 10_000_000)),
		PerAddr:      int(p.int("WR_MAX_CONNS_PER_IP", 0, 0, 10_000_000)),
		FirstRequest: p.duration("WR_FIRST_REQUEST_TIMEOUT", 5*time.Second, 500*time.Millisecond, 10*time.Minute),
	}
	cfg.Streams = stream.Options{MaxPerUser: int(p.int("WR_MAX_STREAMS_PER_USER", 3, 0, 1000))}
	transports := p.str("WR_TRANSPORTS", "sse,ws")
	for _, t := range strings.Split(transports, ",") {
		switch strings.TrimSpace(t) {
		case "sse":
			c.SSE = true
		case "ws":
			c.WS = true
		case "", "none":
		default:
			p.fail("WR_TRANSPORTS", transports, "want a list of sse and ws, or none")
		}
	}
}

// layer1 reads the rate limits, the trusted proxies and the CORS origins.
func (p *envParser) layer1(c *server.Config) {
	c.RateLimits = p.onOff("WR_RATE_LIMITS", true)
	c.Limits = server.Limits{
		EnterIP:   p.limit("WR_LIMIT_ENTER_IP", "120/1m:60"),
		EnterUser: p.limit("WR_LIMIT_ENTER_USER", "20/1m:10"),
		Stream:    p.limit("WR_LIMIT_STREAM", "20/1m:10"),
		OrderRoom: p.limit("WR_LIMIT_ORDER_ROOM", "1000/1s:200"),
		OrderUser: p.limit("WR_LIMIT_ORDER_USER", "10/1m:5"),
	}
	c.Limits.OrdersRead = p.limit("WR_LIMIT_ORDERS_READ", "30/1m:10")
	c.Limits.EnterNewIP = p.limit("WR_LIMIT_ENTER_NEW_IP", "60/1m:30")
	c.Limits.EnterNewNet = p.limit("WR_LIMIT_ENTER_NEW_NET", "240/1m:120")
	c.ClientIPHeader = p.str("WR_CLIENT_IP_HEADER", "X-Real-IP")
	if v := p.str("WR_TRUSTED_PROXIES", ""); v != "" {
		for _, cidr := range strings.Split(v, ",") {
			n, err := access.ParseNet(strings.TrimSpace(cidr))
			if err != nil {
				p.fail("WR_TRUSTED_PROXIES", v, "want comma-separated IPs or CIDRs")
				break
			}
			c.TrustedProxies = append(c.TrustedProxies, n)
		}
	}
	if v := p.str("WR_CORS_ORIGINS", ""); v != "" {
		for _, o := range strings.Split(v, ",") {
			o = strings.TrimRight(strings.TrimSpace(o), "/")
			u, err := url.Parse(o)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" {
				p.fail("WR_CORS_ORIGINS", v, "want exact origins like https://shop.example (no wildcard, no path)")
				break
			}
			c.CORSOrigins = append(c.CORSOrigins, o)
		}
	}
}

// login reads the BCrypt settings and the four login limits.
func (p *envParser) login(c *Config) {
	c.Login = login.Config{
		BcryptCost:        p.bcryptCost(),
		BcryptConcurrency: int(p.int("WR_BCRYPT_CONCURRENCY", 0, 0, 1024)),
		IP:                p.limit("WR_LIMIT_LOGIN_IP", "10/1m:10"),
		ID:                p.limit("WR_LIMIT_LOGIN_ID", "10/1m:5"),
		Pair:              p.limit("WR_LIMIT_LOGIN_PAIR", "5/5m:5"),
		AttemptsIP:        p.limit("WR_LIMIT_LOGIN_ATTEMPTS_IP", "120/1m:60"),
	}
}

// adaptive reads adaptive admission and fault injection.
func (p *envParser) adaptive(c *Config) {
	r := adaptive.Rule{
		Min:        p.int("WR_ADAPTIVE_MIN", 2, 1, 1_000_000),
		Max:        p.int("WR_ADAPTIVE_MAX", 200, 1, 1_000_000),
		Ceiling:    p.duration("WR_ADAPTIVE_P90_CEILING", 2*time.Second, time.Millisecond, 10*time.Minute),
		MinSamples: p.int("WR_ADAPTIVE_MIN_SAMPLES", 20, 1, 1_000_000),
	}
	if r.Max < r.Min {
		p.fail("WR_ADAPTIVE_MAX", strconv.FormatInt(r.Max, 10), "must not be below WR_ADAPTIVE_MIN")
	}
	c.AdaptiveGate = p.onOff("WR_ADAPTIVE_GATE", true)
	c.Adaptive = adaptive.Options{Rule: r,
		Window: p.duration("WR_ADAPTIVE_WINDOW", 10*time.Second, 100*time.Millisecond, 10*time.Minute)}
	c.FaultInjection = p.onOff("WR_FAULT_INJECTION", false)
}

// admission reads the admission loop, the configured rooms with their
// defaults, and the poll bands.
func (p *envParser) admission(c *Config) {
	c.Admission = admission.Options{
		Interval: p.duration("WR_ADMIT_INTERVAL", 100*time.Millisecond, 10*time.Millisecond, time.Minute),
		Defaults: queue.RoomConfig{
			Target:   p.int("WR_TARGET_ACTIVE", 20, 0, 1_000_000),
			EntryTTL: p.duration("WR_ENTRY_TTL", 120*time.Second, time.Second, 24*time.Hour),
		},
	}
	rooms := p.str("WR_ROOMS", "default")
	for _, r := range strings.Split(rooms, ",") {
		r = strings.TrimSpace(r)
		if !queue.ValidRoom(r) {
			p.fail("WR_ROOMS", rooms, fmt.Sprintf("room %q: names are 1-64 of a-z 0-9 - _", r))
			break
		}
		c.Admission.Rooms = append(c.Admission.Rooms, r)
	}
	bands := p.str("WR_POLL_BANDS", queuestatus.DefaultBands)
	if b, err := queuestatus.ParseBands(bands); err != nil {
		p.fail("WR_POLL_BANDS", bands, err.Error())
	} else {
		c.Server.PollBands = b
	}
	// Presence-aware admission needs the presence the idle timeout
	// keeps; a user just entered is expected back within the grace of
	// the slowest band (their first poll may be told any interval).
	if p.onOff("WR_PRESENCE_ADMISSION", true) && c.Queue.IdleTimeout > 0 {
		c.Queue.Grace = presence.Grace(c.Server.PollBands.Slowest())
	}
}

// gateway reads gateway mode: the origin, its limits, the protected routes
// and the pass keys (checked in secrets).
func (p *envParser) gateway(c *Config) {
	g := &c.Gateway
	g.Upstream = upstream.Config{
		URL:            p.str("WR_UPSTREAM", ""),
		ConnectTimeout: p.duration("WR_UPSTREAM_CONNECT_TIMEOUT", 2*time.Second, 100*time.Millisecond, time.Minute),
		Timeout:        p.duration("WR_UPSTREAM_TIMEOUT", 30*time.Second, time.Second, 10*time.Minute),
		BodyLimit:      int(p.int("WR_UPSTREAM_BODY_LIMIT", 32<<20, 1<<10, 1<<30)),
		Tunnels: upstream.TunnelConfig{
			Idle:    p.duration("WR_TUNNEL_IDLE_TIMEOUT", upstream.DefaultTunnelIdle, time.Second, 24*time.Hour),
			Max:     int(p.int("WR_MAX_TUNNELS", upstream.DefaultMaxTunnels, 1, 10_000_000)),
			PerAddr: int(p.int("WR_MAX_TUNNELS_PER_IP", upstream.DefaultTunnelsPerIP, 1, 10_000_000)),
		},
	}
	c.Server.VisitorTTL = p.duration("WR_VISITOR_TTL", 24*time.Hour, time.Minute, 30*24*time.Hour)
	switch g.Challenge = p.str("WR_GATEWAY_CHALLENGE", gateway.ChallengePoW); g.Challenge {
	case gateway.ChallengePoW, gateway.ChallengeOff:
	default:
		p.fail("WR_GATEWAY_CHALLENGE", g.Challenge, "want pow or off")
	}
	g.Difficulty = int(p.int("WR_POW_DIFFICULTY", pow.DefaultDifficulty, pow.MinDifficulty, pow.MaxDifficulty))
	if g.Upstream.URL != "" {
		if _, _, err := upstream.ParseURL(g.Upstream.URL); err != nil {
			p.fail("WR_UPSTREAM", g.Upstream.URL, err.Error())
		}
	}
	g.ForwardAuth = p.onOff("WR_FORWARD_AUTH", false)
	switch {
	case g.ForwardAuth && g.Upstream.URL != "":
		p.fail("WR_FORWARD_AUTH", "on", "the site's proxy forwards in forward auth: unset WR_UPSTREAM (or turn WR_FORWARD_AUTH off to be the proxy)")
	case g.ForwardAuth && len(c.Server.TrustedProxies) == 0:
		p.fail("WR_FORWARD_AUTH", "on", "/_wr/auth answers only the site's proxy: set WR_TRUSTED_PROXIES to its address")
	}
	protect := p.str("WR_PROTECT", "")
	routes, err := gateway.ParseRoutes(protect)
	switch {
	case err != nil:
		p.fail("WR_PROTECT", protect, err.Error()+`; want e.g. "POST /api/orders=sale, GET /checkout/*=sale"`)
	case len(routes) > 0 && !g.Enabled():
		p.fail("WR_PROTECT", protect, "protects routes of an origin: set WR_UPSTREAM (or WR_FORWARD_AUTH=on) too")
	}
	for _, r := range routes {
		// A route to a room nobody creates would send every visitor to a
		// waiting page that answers room_not_found.
		if !slices.Contains(c.Admission.Rooms, r.Room) {
			p.fail("WR_PROTECT", protect, fmt.Sprintf("room %q is not in WR_ROOMS (the rooms created at start): add it there", r.Room))
			break
		}
	}
	g.Protect = routes
}

// passKeys reads WR_PASS_KEY (generated in WR_DEV) and WR_PASS_KEY_PREVIOUS
// (comma-separated), in gateway mode only.
func (p *envParser) passKeys(cfg *Config) {
	g := &cfg.Gateway
	if !g.Enabled() {
		return
	}
	raw := p.getenv("WR_PASS_KEY")
	if raw == "" && cfg.Dev {
		raw = pass.GenerateKey()
	}
	if raw == "" {
		p.fail("WR_PASS_KEY", "", "required with WR_UPSTREAM or WR_FORWARD_AUTH: the base64 of 32 random bytes (openssl rand -base64 32); or set WR_DEV=1 for a generated one")
		return
	}
	key, err := pass.ParseKey(raw)
	if err != nil {
		p.fail("WR_PASS_KEY", "(hidden)", err.Error())
		return
	}
	g.Passes.Key = key
	for _, prev := range addrList(p.getenv("WR_PASS_KEY_PREVIOUS")) {
		k, err := pass.ParseKey(prev)
		if err != nil {
			p.fail("WR_PASS_KEY_PREVIOUS", "(hidden)", err.Error())
			return
		}
		g.Passes.Previous = append(g.Passes.Previous, k)
	}
}

// DemoAdminToken is the admin token make run sets when WR_ADMIN_TOKEN is
// unset; the server accepts it only in WR_DEV.
const DemoAdminToken = "dev-admin-token-local"

// secrets checks the JWT secrets and the admin token, generated in WR_DEV.
func (p *envParser) secrets(cfg *Config) {
	// Example values once shipped in deploy/compose.yaml ("change-me-…")
	// are public: a server started with one signs tokens anyone can forge.
	for _, name := range []string{"WR_JWT_SECRET", "WR_JWT_SECRET_PREVIOUS", "WR_ADMIN_TOKEN", "WR_PASS_KEY"} {
		if strings.Contains(strings.ToLower(p.getenv(name)), "change-me") {
			p.fail(name, "(placeholder)", "is an example value from the repository, public: set a random one (openssl rand -hex 32)")
		}
	}
	p.passKeys(cfg)
	c := &cfg.Server
	switch {
	case cfg.Tokens.Secret == "" && cfg.Dev:
		cfg.Tokens.Secret = randomHex(32)
	case cfg.Tokens.Secret == "":
		p.fail("WR_JWT_SECRET", "", "required (at least 32 bytes); or set WR_DEV=1 for a generated one")
	case len(cfg.Tokens.Secret) < 32:
		p.fail("WR_JWT_SECRET", "(hidden)", "too short: use at least 32 bytes")
	}
	if cfg.Tokens.Previous != "" && len(cfg.Tokens.Previous) < 32 {
		p.fail("WR_JWT_SECRET_PREVIOUS", "(hidden)", "too short: use at least 32 bytes")
	}
	if c.AdminToken == "" && cfg.Dev {
		c.AdminToken = randomHex(16)
	}
	// make run's token is printed in the README: fine for a demo on
	// loopback, never for a server anyone else can reach.
	if c.AdminToken == DemoAdminToken && !cfg.Dev {
		p.fail("WR_ADMIN_TOKEN", "(placeholder)", "is make run's demo token, public in the README: set a random one (openssl rand -hex 16), or WR_DEV=1 for a demo")
	}
	// The admin API changes who gets in: a short token is guessable.
	if c.AdminToken != "" && len(c.AdminToken) < MinAdminTokenLen {
		p.fail("WR_ADMIN_TOKEN", "(hidden)", fmt.Sprintf("too short: use at least %d bytes", MinAdminTokenLen))
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

type envParser struct {
	getenv func(string) string
	err    error
}

func (p *envParser) fail(name, value, reason string) {
	if p.err == nil {
		p.err = &ConfigError{Var: name, Value: value, Reason: reason}
	}
}

func (p *envParser) str(name, def string) string {
	if v := strings.TrimSpace(p.getenv(name)); v != "" {
		return v
	}
	return def
}

func (p *envParser) flag(name string) bool {
	switch v := strings.ToLower(strings.TrimSpace(p.getenv(name))); v {
	case "", "0", "false", "no", "off":
		return false
	case "1", "true", "yes", "on":
		return true
	default:
		p.fail(name, v, "want 1 or 0")
		return false
	}
}

func (p *envParser) onOff(name string, def bool) bool {
	switch v := strings.ToLower(strings.TrimSpace(p.getenv(name))); v {
	case "":
		return def
	case "on", "1", "true", "yes":
		return true
	case "off", "0", "false", "no":
		return false
	default:
		p.fail(name, v, "want on or off")
		return def
	}
}

func (p *envParser) limit(name, def string) ratelimit.Limit {
	v := p.str(name, def)
	l, err := ratelimit.Parse(v)
	if err != nil {
		p.fail(name, v, err.Error())
	}
	return l
}

func (p *envParser) int(name string, def, lo, hi int64) int64 {
	v := strings.TrimSpace(p.getenv(name))
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		p.fail(name, v, fmt.Sprintf("want an integer in [%d, %d]", lo, hi))
		return def
	}
	return n
}

// durationOrZero is duration that also accepts 0 (off).
func (p *envParser) durationOrZero(name string, def, lo, hi time.Duration) time.Duration {
	if v := strings.TrimSpace(p.getenv(name)); v == "0" || v == "0s" {
		return 0
	}
	return p.duration(name, def, lo, hi)
}

func (p *envParser) duration(name string, def, lo, hi time.Duration) time.Duration {
	v := strings.TrimSpace(p.getenv(name))
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < lo || d > hi {
		p.fail(name, v, fmt.Sprintf("want a duration in [%v, %v], e.g. 100ms or 2m", lo, hi))
		return def
	}
	return d
}
