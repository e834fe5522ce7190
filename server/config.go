package server

import (
	"net"
	"time"

	"waitingroom/queue"
	"waitingroom/queue/adaptive"
	"waitingroom/server/accesslog"
	"waitingroom/server/checkout"
	"waitingroom/server/listener"
	"waitingroom/server/login"
	"waitingroom/server/ratelimit"
	"waitingroom/server/token"
	"waitingroom/stream"
)

// Config is the server's configuration: its own HTTP settings, then the
// configuration of each component it builds, in that component's own type.
// cmd/waitingroom reads it from the environment (the variable of each
// setting is named in its comment, and in docs/operations.md's table); a test may
// fill it directly.
//
// The components' option structs carry settings and dependencies alike:
// the composition root sets the settings named here, New sets the rest
// (clients, callbacks, the logger) and overrides whatever was there.
type Config struct {
	HTTPAddr  string // WR_HTTP_ADDR: the API and the page
	AdminAddr string // WR_ADMIN_ADDR: metrics, health, admin
	// AdminToken (WR_ADMIN_TOKEN) is the bearer token of /admin; empty
	// refuses every admin request.
	AdminToken   string
	BodyLimit    int           // WR_BODY_LIMIT: larger bodies get 413
	Shutdown     time.Duration // WR_SHUTDOWN_TIMEOUT
	CookieSecure bool          // WR_COOKIE_SECURE: mark the wr_queue cookie Secure
	// CORSOrigins (WR_CORS_ORIGINS): exact origins allowed to call the API
	// from a browser with credentials; empty: no CORS headers at all.
	CORSOrigins []string
	// TrustedProxies (WR_TRUSTED_PROXIES) may tell the client's IP in
	// ClientIPHeader (WR_CLIENT_IP_HEADER); from anyone else the header
	// (and X-Forwarded-For) is ignored.
	TrustedProxies []*net.IPNet
	ClientIPHeader string
	// SSE and WS (WR_TRANSPORTS) are the push transports offered; a
	// disabled one answers 503 so clients fall back (polling is always on).
	SSE, WS     bool
	PollBands   Bands         // WR_POLL_BANDS
	MaxQuantity int           // WR_MAX_QUANTITY: largest quantity one order may ask
	AccessTTL   time.Duration // WR_ACCESS_TTL: lifetime of access tokens
	QueueTTL    time.Duration // WR_QUEUE_TTL: lifetime of queue tokens
	// RateLimits (WR_RATE_LIMITS) switches layer 1's limits, login's
	// included; off is for benchmarks of the paths behind them.
	RateLimits bool
	Limits     Limits

	// Listener: WR_MAX_CONNS (MaxConns, which must be positive here: the
	// composition root derives it from the descriptor limit),
	// WR_MAX_CONNS_PER_IP (PerAddr; behind a trusted proxy it caps each
	// forwarded client's open streams instead), WR_FIRST_REQUEST_TIMEOUT.
	Listener listener.Config
	Tokens   token.Config  // WR_JWT_SECRET, WR_JWT_SECRET_PREVIOUS
	Login    login.Config  // WR_BCRYPT_COST, WR_BCRYPT_CONCURRENCY, WR_LIMIT_LOGIN_*
	Queue    queue.Options // WR_IDLE_TIMEOUT (the key prefix is Options.KeyPrefix)
	// Admission: WR_ADMIT_INTERVAL, WR_ROOMS, and the new rooms' defaults
	// WR_TARGET_ACTIVE and WR_ENTRY_TTL.
	Admission queue.AdmitterOptions
	Streams   stream.Options   // WR_MAX_STREAMS_PER_USER
	Checkout  checkout.Options // WR_ORDER_TIMEOUT
	// Adaptive: WR_ADAPTIVE_WINDOW, and the rule's WR_ADAPTIVE_MIN,
	// WR_ADAPTIVE_MAX, WR_ADAPTIVE_MIN_SAMPLES, WR_ADAPTIVE_P90_CEILING.
	Adaptive       adaptive.Options
	FaultInjection bool // WR_FAULT_INJECTION: PUT /admin/faults allowed
	// Gateway: WR_UPSTREAM (off when empty), WR_UPSTREAM_CONNECT_TIMEOUT,
	// WR_UPSTREAM_TIMEOUT, WR_UPSTREAM_BODY_LIMIT, WR_PROTECT, WR_PASS_KEY,
	// WR_PASS_KEY_PREVIOUS, WR_VISITOR_TTL.
	Gateway GatewayConfig
	// AccessLog (WR_ACCESS_LOG): which requests get an access line; the
	// zero value is accesslog.Errors.
	AccessLog accesslog.Mode
}

// Limits are layer 1's limits outside login (login.Config has those), each
// "RATE/PERIOD[:BURST]".
type Limits struct {
	EnterIP   ratelimit.Limit // WR_LIMIT_ENTER_IP: enters per client address
	EnterUser ratelimit.Limit // WR_LIMIT_ENTER_USER: enters per user
	Stream    ratelimit.Limit // WR_LIMIT_STREAM: stream connects per user and room
	OrderRoom ratelimit.Limit // WR_LIMIT_ORDER_ROOM: orders per room, queue or not
	OrderUser ratelimit.Limit // WR_LIMIT_ORDER_USER: orders per user
	// EnterNewIP and EnterNewNet (WR_LIMIT_ENTER_NEW_IP,
	// WR_LIMIT_ENTER_NEW_NET): new places an anonymous visitor (gateway
	// mode) takes in one room, per address and per network (visitorenter.go).
	EnterNewIP  ratelimit.Limit
	EnterNewNet ratelimit.Limit
	// OrdersRead (WR_LIMIT_ORDERS_READ): reads of one's own orders per
	// user — each is a Postgres query.
	OrdersRead ratelimit.Limit
}
