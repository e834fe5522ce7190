package server

import (
	"net"
	"time"

	"waitingroom/server/client"
	"waitingroom/server/listener"
	"waitingroom/server/queuestatus"
	"waitingroom/server/ratelimit"
)

// Config is the HTTP adapters' configuration. cmd/waitingroom reads it
// from the environment (the variable of each setting is named in its
// comment, and in docs/operations.md's table); a test may fill it
// directly. The components' own configurations are the composition
// root's: it builds them, and hands New the built components (Deps).
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
	PollBands   queuestatus.Bands // WR_POLL_BANDS
	MaxQuantity int               // WR_MAX_QUANTITY: largest quantity one order may ask
	AccessTTL   time.Duration     // WR_ACCESS_TTL: lifetime of access tokens
	QueueTTL    time.Duration     // WR_QUEUE_TTL: lifetime of queue tokens
	// VisitorTTL (WR_VISITOR_TTL, gateway mode) is how long an anonymous
	// visitor keeps its identity (and so its place) without coming back.
	VisitorTTL time.Duration
	// RateLimits (WR_RATE_LIMITS) switches layer 1's limits, login's
	// included; off is for benchmarks of the paths behind them.
	RateLimits bool
	Limits     Limits

	// Listener: WR_MAX_CONNS (MaxConns, which must be positive here: the
	// composition root derives it from the descriptor limit),
	// WR_MAX_CONNS_PER_IP (PerAddr; behind a trusted proxy it caps each
	// forwarded client's open streams instead), WR_FIRST_REQUEST_TIMEOUT.
	Listener listener.Config
}

// clients is the resolver of the requests' clients under c's proxies.
func (c Config) clients() client.Resolver {
	return client.Resolver{TrustedProxies: c.TrustedProxies, Header: c.ClientIPHeader, AlwaysHTTPS: c.CookieSecure}
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
