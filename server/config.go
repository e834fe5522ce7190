package server

import (
	"net"
	"time"

	"waitingroom/server/admin"
	"waitingroom/server/client"
	"waitingroom/server/listener"
	"waitingroom/server/queuestatus"
	"waitingroom/server/ratelimit"
)

// Config is the HTTP adapters' configuration. cmd/waitingroom reads it from
// the environment (docs/operations.md, Configuration, and docs/security.md
// name the variable of each setting); a test may fill it directly. The
// components' own configurations are the composition root's: it builds
// them, and hands New the built components (Deps).
type Config struct {
	HTTPAddr  string // the public address: the API and the page
	AdminAddr string // the management address: metrics, health, admin
	// AdminToken is the bearer token of /admin; empty refuses every admin
	// request.
	AdminToken   string
	BodyLimit    int           // larger bodies get 413
	Shutdown     time.Duration // the graceful shutdown's bound
	CookieSecure bool          // mark the wr_queue cookie Secure
	// CORSOrigins: exact origins allowed to call the API from a browser
	// with credentials; empty: no CORS headers at all.
	CORSOrigins []string
	// TrustedProxies may tell the client's IP in ClientIPHeader; from
	// anyone else the header (and X-Forwarded-For) is ignored.
	TrustedProxies []*net.IPNet
	ClientIPHeader string
	// SSE and WS are the push transports offered; a disabled one answers
	// 503 so clients fall back (polling is always on).
	SSE, WS     bool
	PollBands   queuestatus.Bands // pollAfterMs by position
	MaxQuantity int               // largest quantity one order may ask
	AccessTTL   time.Duration     // lifetime of access tokens
	QueueTTL    time.Duration     // lifetime of queue tokens
	// VisitorTTL (gateway mode) is how long an anonymous visitor keeps its
	// identity (and so its place) without coming back.
	VisitorTTL time.Duration
	// RateLimits switches layer 1's limits, login's included; off is for
	// benchmarks of the paths behind them.
	RateLimits bool
	Limits     Limits

	// Listener: MaxConns must be positive here (the composition root
	// derives it from the descriptor limit when the operator sets none);
	// PerAddr 0 is PerAddressCap's; behind a trusted proxy PerAddr caps
	// each forwarded client's open streams instead.
	Listener listener.Config

	// Names are the operator's names of the settings that some answers
	// ask to change.
	Names Names
}

// Names are what the operator calls the settings that some answers ask to
// change (cmd/waitingroom: its environment variables); the answers quote
// them as they are.
type Names struct {
	Admin admin.Names // the management app's
	// ForwardAuth is forward auth's switch, named with "=on" by the 404 of
	// a path outside gateway.Prefix in forward auth.
	ForwardAuth string
}

// clients is the resolver of the requests' clients under c's proxies.
func (c Config) clients() client.Resolver {
	return client.Resolver{TrustedProxies: c.TrustedProxies, Header: c.ClientIPHeader, AlwaysHTTPS: c.CookieSecure}
}

// Limits are layer 1's limits outside login (login.Config has those), each
// "RATE/PERIOD[:BURST]".
type Limits struct {
	EnterIP   ratelimit.Limit // enters per client address
	EnterUser ratelimit.Limit // enters per user
	Stream    ratelimit.Limit // stream connects per user and room
	OrderRoom ratelimit.Limit // orders per room, queue or not
	OrderUser ratelimit.Limit // orders per user
	// EnterNewIP and EnterNewNet: new places an anonymous visitor (gateway
	// mode) takes in one room, per address and per network (visitorenter.go).
	EnterNewIP  ratelimit.Limit
	EnterNewNet ratelimit.Limit
	// OrdersRead: reads of one's own orders per user — each is a Postgres
	// query.
	OrdersRead ratelimit.Limit
}
