package server

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"waitingroom/queue"
	"waitingroom/server/access"
	"waitingroom/server/ratelimit"
)

// Config is the whole configuration, read from the environment (12-factor).
// Every field names the variable it comes from.
type Config struct {
	HTTPAddr  string // WR_HTTP_ADDR, default ":8080": the API and the page
	AdminAddr string // WR_ADMIN_ADDR, default "127.0.0.1:8081": metrics, health, admin
	RedisURL  string // REDIS_URL, default "redis://127.0.0.1:6379/0"
	// Redis is the topology OpenRedis connects to; see RedisTopology.
	Redis        RedisTopology
	DatabaseURL  string // DATABASE_URL, default "postgres://postgres@127.0.0.1:5432/waitingroom?sslmode=disable"
	Dev          bool   // WR_DEV=1: generated JWT secret and admin token, with a warning
	JWTSecret    string // WR_JWT_SECRET: required (>= 32 bytes) unless WR_DEV=1
	JWTPrevious  string // WR_JWT_SECRET_PREVIOUS: still accepted for verification (rotation)
	AdminToken   string // WR_ADMIN_TOKEN: bearer token of /admin; empty disables /admin
	Rooms        []string
	TargetActive int64         // WR_TARGET_ACTIVE (20): default targetActive of new rooms
	AdmitEvery   time.Duration // WR_ADMIT_INTERVAL (100ms)
	EntryTTL     time.Duration // WR_ENTRY_TTL (120s)
	PollBands    Bands         // WR_POLL_BANDS ("100:1s,1000:3s,*:5s")
	BcryptCost   int           // WR_BCRYPT_COST (10)
	// BcryptConcurrency (WR_BCRYPT_CONCURRENCY, 0 = half the cores, at
	// least 1) is how many BCrypt verifications run at once; logins beyond
	// wait up to 2 s for a slot, then get 503 with Retry-After.
	BcryptConcurrency int
	DBPool            int32         // WR_DB_POOL (40)
	AccessTTL         time.Duration // WR_ACCESS_TTL (1h): lifetime of access tokens
	QueueTTL          time.Duration // WR_QUEUE_TTL (6h): lifetime of queue tokens
	OrderTimeout      time.Duration // WR_ORDER_TIMEOUT (5s): the order transaction's deadline
	MaxQuantity       int           // WR_MAX_QUANTITY (10): largest quantity one order may ask
	BodyLimit         int           // WR_BODY_LIMIT (16384 bytes): larger bodies get 413
	Shutdown          time.Duration // WR_SHUTDOWN_TIMEOUT (15s)
	CookieSecure      bool          // WR_COOKIE_SECURE=1: mark the wr_queue cookie Secure
	// MaxConns (WR_MAX_CONNS) caps concurrent public connections; 0 derives
	// it from RLIMIT_NOFILE (listener.Ceiling). Excess connections get 503.
	MaxConns int
	// MaxConnsPerIP (WR_MAX_CONNS_PER_IP) caps the public connections one
	// client address (IPv6: one /64) holds open, streams included; 0
	// derives it from the ceiling (listener.PerAddressCap). Behind a trusted proxy
	// it caps each forwarded client's open streams instead.
	MaxConnsPerIP int
	// FirstRequestTimeout (WR_FIRST_REQUEST_TIMEOUT, 5s): a connection
	// that has not sent one complete request this long after accept is
	// closed, so idle sockets cannot hoard slots.
	FirstRequestTimeout time.Duration
	// MaxStreamsPerUser (WR_MAX_STREAMS_PER_USER, 3; 0: no cap): streams
	// (SSE and WebSocket together) one user holds in one room on this
	// instance; a newer one replaces the oldest.
	MaxStreamsPerUser int
	// IdleTimeout (WR_IDLE_TIMEOUT, 60s; 0 disables): a waiting user who
	// neither polls nor holds a stream this long is removed from the queue.
	IdleTimeout time.Duration
	// Transports (WR_TRANSPORTS, default "sse,ws") are the push transports
	// offered; a disabled one answers 503 so clients fall back (polling is
	// always on). For proxies that break one of them, and for tests.
	SSE, WS bool

	// Layer 1 (rate limits). RateLimits (WR_RATE_LIMITS, "on") switches
	// them all; "off" is for benchmarks of the paths behind them.
	RateLimits bool
	Limits     Limits
	// TrustedProxies (WR_TRUSTED_PROXIES, CIDRs) may tell the client's IP in
	// ClientIPHeader (WR_CLIENT_IP_HEADER, "X-Real-IP"); from anyone else
	// the header (and X-Forwarded-For) is ignored.
	TrustedProxies []*net.IPNet
	ClientIPHeader string
	// CORSOrigins (WR_CORS_ORIGINS): exact origins, e.g.
	// "https://shop.example", allowed to call the API from a browser with
	// credentials. Empty (the default): no CORS headers at all; "*" is
	// refused (credentials are never allowed with a wildcard).
	CORSOrigins []string

	// Adaptive admission (rooms in mode "adaptive"). AdaptiveMin and
	// AdaptiveMax (WR_ADAPTIVE_MIN 2, WR_ADAPTIVE_MAX 200) are the default
	// bounds of the limit; a room's minActive/maxActive override them.
	// AdaptiveWindow (WR_ADAPTIVE_WINDOW, 10s) is the length of one signals
	// window and of the controller's step. AdaptiveCeiling
	// (WR_ADAPTIVE_P90_CEILING, 2s): an order p90 above it cuts the limit
	// whatever the baseline. AdaptiveMinSamples (WR_ADAPTIVE_MIN_SAMPLES,
	// 20): with fewer orders in a window the limit holds.
	AdaptiveMin, AdaptiveMax int64
	AdaptiveWindow           time.Duration
	AdaptiveCeiling          time.Duration
	AdaptiveMinSamples       int64
	// FaultInjection (WR_FAULT_INJECTION, "off"): "on" enables PUT
	// /admin/faults (an order-path delay for tests and demos).
	FaultInjection bool
}

// Limits are layer 1's limits, each "RATE/PERIOD[:BURST]".
type Limits struct {
	LoginIP   ratelimit.Limit // WR_LIMIT_LOGIN_IP: failed logins per client address
	LoginID   ratelimit.Limit // WR_LIMIT_LOGIN_ID: failed logins per loginId (soft: ratelimits.go)
	EnterIP   ratelimit.Limit // WR_LIMIT_ENTER_IP: enters per client IP
	EnterUser ratelimit.Limit // WR_LIMIT_ENTER_USER: enters per user
	Stream    ratelimit.Limit // WR_LIMIT_STREAM: stream connects per user and room
	OrderRoom ratelimit.Limit // WR_LIMIT_ORDER_ROOM: orders per room, queue or not
	OrderUser ratelimit.Limit // WR_LIMIT_ORDER_USER: orders per user
	// LoginPair (WR_LIMIT_LOGIN_PAIR, "5/5m:5"): failed logins per loginId
	// and client address. LoginAttemptsIP (WR_LIMIT_LOGIN_ATTEMPTS_IP,
	// "120/1m:60"): every login attempt per client address.
	LoginPair, LoginAttemptsIP ratelimit.Limit
}

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
		HTTPAddr:          p.str("WR_HTTP_ADDR", ":8080"),
		AdminAddr:         p.str("WR_ADMIN_ADDR", "127.0.0.1:8081"),
		RedisURL:          p.str("REDIS_URL", "redis://127.0.0.1:6379/0"),
		DatabaseURL:       p.str("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/waitingroom?sslmode=disable"),
		Dev:               p.flag("WR_DEV"),
		JWTSecret:         getenv("WR_JWT_SECRET"),
		JWTPrevious:       getenv("WR_JWT_SECRET_PREVIOUS"),
		AdminToken:        getenv("WR_ADMIN_TOKEN"),
		TargetActive:      p.int("WR_TARGET_ACTIVE", 20, 0, 1_000_000),
		AdmitEvery:        p.duration("WR_ADMIT_INTERVAL", 100*time.Millisecond, 10*time.Millisecond, time.Minute),
		EntryTTL:          p.duration("WR_ENTRY_TTL", 120*time.Second, time.Second, 24*time.Hour),
		BcryptCost:        int(p.int("WR_BCRYPT_COST", 10, 4, 31)),
		BcryptConcurrency: int(p.int("WR_BCRYPT_CONCURRENCY", 0, 0, 1024)),
		DBPool:            int32(p.int("WR_DB_POOL", 40, 1, 10_000)),
		AccessTTL:         p.duration("WR_ACCESS_TTL", time.Hour, time.Minute, 30*24*time.Hour),
		QueueTTL:          p.duration("WR_QUEUE_TTL", 6*time.Hour, time.Minute, 7*24*time.Hour),
		OrderTimeout:      p.duration("WR_ORDER_TIMEOUT", 5*time.Second, 100*time.Millisecond, 5*time.Minute),
		MaxQuantity:       int(p.int("WR_MAX_QUANTITY", 10, 1, 1_000_000)),
		BodyLimit:         int(p.int("WR_BODY_LIMIT", 16<<10, 1<<10, 16<<20)),
		Shutdown:          p.duration("WR_SHUTDOWN_TIMEOUT", 15*time.Second, time.Second, 10*time.Minute),
		CookieSecure:      p.flag("WR_COOKIE_SECURE"),
		MaxConns:          int(p.int("WR_MAX_CONNS", 0, 0, 10_000_000)),
		IdleTimeout:       p.durationOrZero("WR_IDLE_TIMEOUT", 60*time.Second, 5*time.Second, 24*time.Hour),
	}
	p.connections(&c)
	p.layer1(&c)
	p.adaptive(&c)
	p.roomsAndBands(&c)
	p.secrets(&c)
	return c, p.err
}

// connections reads the connection caps, the Redis topology and the push transports.
func (p *envParser) connections(c *Config) {
	c.MaxConnsPerIP = int(p.int("WR_MAX_CONNS_PER_IP", 0, 0, 10_000_000))
	c.FirstRequestTimeout = p.duration("WR_FIRST_REQUEST_TIMEOUT", 5*time.Second, 500*time.Millisecond, 10*time.Minute)
	c.MaxStreamsPerUser = int(p.int("WR_MAX_STREAMS_PER_USER", 3, 0, 1000))
	c.Redis = p.redisTopology(c.RedisURL)
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
func (p *envParser) layer1(c *Config) {
	c.RateLimits = p.onOff("WR_RATE_LIMITS", true)
	c.Limits = Limits{
		LoginIP:   p.limit("WR_LIMIT_LOGIN_IP", "10/1m:10"),
		LoginID:   p.limit("WR_LIMIT_LOGIN_ID", "10/1m:5"),
		EnterIP:   p.limit("WR_LIMIT_ENTER_IP", "120/1m:60"),
		EnterUser: p.limit("WR_LIMIT_ENTER_USER", "20/1m:10"),
		Stream:    p.limit("WR_LIMIT_STREAM", "20/1m:10"),
		OrderRoom: p.limit("WR_LIMIT_ORDER_ROOM", "1000/1s:200"),
		OrderUser: p.limit("WR_LIMIT_ORDER_USER", "10/1m:5"),
	}
	c.Limits.LoginPair = p.limit("WR_LIMIT_LOGIN_PAIR", "5/5m:5")
	c.Limits.LoginAttemptsIP = p.limit("WR_LIMIT_LOGIN_ATTEMPTS_IP", "120/1m:60")
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

// adaptive reads adaptive admission and fault injection.
func (p *envParser) adaptive(c *Config) {
	c.AdaptiveMin = p.int("WR_ADAPTIVE_MIN", 2, 1, 1_000_000)
	c.AdaptiveMax = p.int("WR_ADAPTIVE_MAX", 200, 1, 1_000_000)
	if c.AdaptiveMax < c.AdaptiveMin {
		p.fail("WR_ADAPTIVE_MAX", strconv.FormatInt(c.AdaptiveMax, 10), "must not be below WR_ADAPTIVE_MIN")
	}
	c.AdaptiveWindow = p.duration("WR_ADAPTIVE_WINDOW", 10*time.Second, 100*time.Millisecond, 10*time.Minute)
	c.AdaptiveCeiling = p.duration("WR_ADAPTIVE_P90_CEILING", 2*time.Second, time.Millisecond, 10*time.Minute)
	c.AdaptiveMinSamples = p.int("WR_ADAPTIVE_MIN_SAMPLES", 20, 1, 1_000_000)
	c.FaultInjection = p.onOff("WR_FAULT_INJECTION", false)
}

// roomsAndBands reads the configured rooms and the poll bands.
func (p *envParser) roomsAndBands(c *Config) {
	rooms := p.str("WR_ROOMS", "default")
	for _, r := range strings.Split(rooms, ",") {
		r = strings.TrimSpace(r)
		if !queue.ValidRoom(r) {
			p.fail("WR_ROOMS", rooms, fmt.Sprintf("room %q: names are 1-64 of a-z 0-9 - _", r))
			break
		}
		c.Rooms = append(c.Rooms, r)
	}
	bands := p.str("WR_POLL_BANDS", DefaultBands)
	if b, err := ParseBands(bands); err != nil {
		p.fail("WR_POLL_BANDS", bands, err.Error())
	} else {
		c.PollBands = b
	}
}

// secrets reads the JWT secrets and the admin token (generated in WR_DEV).
func (p *envParser) secrets(c *Config) {
	switch {
	case c.JWTSecret == "" && c.Dev:
		c.JWTSecret = randomHex(32)
	case c.JWTSecret == "":
		p.fail("WR_JWT_SECRET", "", "required (at least 32 bytes); or set WR_DEV=1 for a generated one")
	case len(c.JWTSecret) < 32:
		p.fail("WR_JWT_SECRET", "(hidden)", "too short: use at least 32 bytes")
	}
	if c.JWTPrevious != "" && len(c.JWTPrevious) < 32 {
		p.fail("WR_JWT_SECRET_PREVIOUS", "(hidden)", "too short: use at least 32 bytes")
	}
	if c.AdminToken == "" && c.Dev {
		c.AdminToken = randomHex(16)
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
