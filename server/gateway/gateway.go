package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"waitingroom/queue"
	"waitingroom/server/gateway/origin"
	"waitingroom/server/pass"
	"waitingroom/server/ratelimit/local"
	"waitingroom/server/token"
)

// Prefix is where the waiting room's own page and API live in gateway
// mode; everything else is the origin's.
const Prefix = reservedPrefix

// Slots are the queue operations behind a pass (queue.Queue).
type Slots interface {
	Consume(ctx context.Context, room, user, token string, inFlight time.Duration) (queue.Claim, error)
	ConsumeSession(ctx context.Context, room, user, token, id, network string, idle time.Duration) (queue.Claim, error)
	Release(ctx context.Context, c queue.Claim) (bool, error)
	RestoreAtMost(ctx context.Context, c queue.Claim, most int) (bool, error)
	Hold(ctx context.Context, c queue.Claim, idle time.Duration, end time.Time, u queue.SessionUse) (queue.Held, error)
}

// Signer signs passes for the origin (pass.Signer).
type Signer interface {
	Sign(pass.Claims) (string, error)
}

// Recorder takes protected requests' latency and whether the origin
// failed them, sampled per visitor (signals.go), in windows of Window
// (adaptive.Recorder: admission follows the origin).
type Recorder interface {
	Order(room string, latency time.Duration, failed bool, now time.Time)
	Window() time.Duration
}

// Identity is what the server knows of a request: who is asking, over
// which scheme, and with which queue token.
type Identity interface {
	Forwarded(ctx *fasthttp.RequestCtx) origin.Forwarded
	// QueueUser is the subject of the request's queue token when it is a
	// valid token for room, else "".
	QueueUser(ctx *fasthttp.RequestCtx, room string) string
	// OwnCookie reports whether a cookie is the waiting room's (never
	// forwarded to the origin).
	OwnCookie(name []byte) bool
}

// Options are a Gateway's parts.
type Options struct {
	// Upstream is the origin's client (NewUpstream); nil in forward auth
	// (forwardauth.go), where the gateway only judges requests a proxy
	// asks about.
	Upstream *origin.Client
	Settings *Store
	Slots    Slots
	Signer   Signer
	Tokens   *token.Issuer // session cookies
	Recorder Recorder
	Identity Identity
	Logger   *slog.Logger
	// Registerer receives the gateway's metrics (nil: none registered).
	Registerer prometheus.Registerer
	// TrustedProxiesName is what the operator calls the trusted proxies'
	// setting: forward auth's refusal of any other peer says to add the
	// proxy there (cmd/waitingroom: the variable's name).
	TrustedProxiesName string
}

// Gateway answers every request of the public port outside Prefix: it
// forwards unprotected ones at once, and protected ones with a pass.
type Gateway struct {
	o       Options
	auth    bool // forward auth: no Upstream, nothing forwarded
	m       gatewayMetrics
	tunnels tunnelMetrics
	gate    sessionGate // sessions' limits, this instance's part
	samples sampler     // the adaptive signals, one visitor at a time
	// decisions bounds a visit's decisions in forward auth (DecisionHold).
	decisions *local.Limiter
	health    originHealth // the last forward's outcome (originhealth.go)
	passes    passCache    // the passes of visits and sessions, handed out again for a second
}

// New returns a Gateway. It does no I/O.
func New(o Options) *Gateway {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	tunnels := newTunnelMetrics(o.Registerer, o.Upstream)
	g := &Gateway{o: o, auth: o.Upstream == nil, m: newGatewayMetrics(o.Registerer), tunnels: tunnels, samples: sampler{rec: o.Recorder}}
	if g.auth {
		g.decisions = local.New(local.Options{})
	}
	return g
}

// routedMethod is the method to match a request's routes with: its own,
// or AnyMethod for a POST that an origin may route as another method.
// Rails, Sinatra (Rack), Laravel and Symfony read a _method field from the
// body — Rack from a POST with no media type or one it splits at "," or
// ";", Laravel also from JSON — and Express's method-override from the
// query (the override headers never reach the origin: origin's Prepare
// drops them). The gateway does not read bodies, and does not guess which
// media type an origin parses, so every POST with a body, or whose query
// names _method in any key, is judged by every route of its path whatever
// their method: a POST to a GET-protected path then needs a pass too. A
// POST with no body (no Content-Length, or 0, and not chunked) and no
// _method in its query is a POST. Only POST is read as another method:
// the frameworks above override POST alone.
func routedMethod(ctx *fasthttp.RequestCtx) string {
	if !ctx.IsPost() {
		return string(ctx.Method())
	}
	if ctx.Request.Header.ContentLength() != 0 || namesMethod(ctx.QueryArgs()) {
		return AnyMethod
	}
	return "POST"
}

// namesMethod reports whether a query has a key holding "_method" in any
// case ("_method", "_METHOD", "x[_method]"): the override's spellings.
func namesMethod(args *fasthttp.Args) bool {
	found := false
	args.VisitAll(func(k, _ []byte) {
		if bytes.Contains(bytes.ToLower(k), []byte("_method")) {
			found = true
		}
	})
	return found
}

// Close closes the idle connections to the origin (after the public
// port's shutdown).
func (g *Gateway) Close() {
	if !g.auth {
		g.o.Upstream.Close()
	}
}

// BodyLimit is the largest request body forwarded to the origin
// (origin.Config.BodyLimit): the public port reads no more. 0 in forward
// auth, which forwards nothing.
func (g *Gateway) BodyLimit() int {
	if g.auth {
		return 0
	}
	return int(g.o.Upstream.BodyLimit())
}

// ForwardAuth reports whether the gateway only judges (forward auth).
func (g *Gateway) ForwardAuth() bool { return g.auth }

// Handle answers one request: the fasthttp handler of the origin's paths.
func (g *Gateway) Handle(ctx *fasthttp.RequestCtx) {
	sent, raw := RequestPaths(ctx)
	g.judge(ctx, false, sent, raw)
}

// RequestPaths are a request's two spellings of its path that Match
// reads: sent, the path as the origin receives it (the public port's
// server decodes and normalizes the path, and the request line to the
// origin re-encodes it, package origin's writeHead), and raw, the path as the
// client sent it.
func RequestPaths(ctx *fasthttp.RequestCtx) (sent, raw string) {
	u := ctx.URI()
	target := u.RequestURI()
	if i := bytes.IndexByte(target, '?'); i >= 0 {
		target = target[:i]
	}
	return string(target), string(u.PathOriginal())
}

// judge serves a request for the origin: forwards it, or in forward auth
// answers whether it may pass. anyMethod: judge it by every route of its
// path (it names a method override); path and raw are Match's.
func (g *Gateway) judge(ctx *fasthttp.RequestCtx, anyMethod bool, path, raw string) {
	method := routedMethod(ctx)
	if anyMethod {
		method = AnyMethod
	}
	r, protected, err := g.o.Settings.Routes().Find(method, path, raw)
	room := r.Room
	if g.auth {
		// Forward auth's access line names the request judged, which its
		// own request line does not; in gateway mode the access log finds
		// the route itself, only for the lines it writes (no allocation on
		// every forward).
		ctx.SetUserValue(judgedKey{}, &judged{method: string(ctx.Method()), route: r.Pattern, room: room})
	}
	if err != nil {
		outcome, code := "invalid_path", "invalid_request"
		if errors.Is(err, ErrAmbiguous) {
			outcome, code = "ambiguous", "ambiguous_request"
		}
		g.m.requests.WithLabelValues("unknown", outcome).Inc()
		writeError(ctx, failure{status: fasthttp.StatusBadRequest, code: code, msg: err.Error()})
		return
	}
	if !protected {
		g.through(ctx, kindUnprotected, "")
		return
	}
	st := g.o.Settings.Get(room)
	var done, stale bool
	cookie := VisitCookie(room)
	if st.Pass == PassSession {
		done, stale = g.session(ctx, room, st)
		cookie = SessionCookie(room)
	} else {
		done, stale = g.once(ctx, room, st)
	}
	if !done {
		g.m.requests.WithLabelValues(kindProtected, "no_pass").Inc()
		g.refuse(ctx, room)
	}
	if stale && !done { // done: a new session's or visit's cookie replaced it
		expireCookie(ctx, cookie, g.secure(ctx))
	}
}

// judgedKey holds a request's *judged in its user values.
type judgedKey struct{}

// judged is what judge made of a request, for its access line.
type judged struct {
	method, route, room string
	decision            string // pass, wait, refused, unprotected
}

// Judgement is what forward auth judged of a question, for its access
// line: the original request's method, the route pattern that covered it
// ("" none), its room, and the decision ("pass", "wait", "refused" or
// "unprotected"). ok: the question was judged (never in gateway mode).
func Judgement(ctx *fasthttp.RequestCtx) (method, route, room, decision string, ok bool) {
	j, ok := ctx.UserValue(judgedKey{}).(*judged)
	if !ok {
		return "", "", "", "", false
	}
	return j.method, j.route, j.room, j.decision, true
}

// through lets a request through with pass p (may be ""): in forward
// auth the site's proxy forwards it once authorized (authorize,
// forwardauth.go), in gateway mode the gateway forwards it. It returns how
// it went, for the caller to settle a pass; latency -1: nothing to learn
// about the origin's speed.
func (g *Gateway) through(ctx *fasthttp.RequestCtx, kind, p string) (failed bool, latency time.Duration) {
	if g.auth {
		g.authorize(ctx, kind, p)
		return false, -1
	}
	return g.forward(ctx, kind, p)
}

// forward sends the request on with pass (may be "") and answers the
// origin's answer or the failure. It returns how it went, for the caller
// to settle a pass. Gateway mode only: forward auth forwards nothing.
//
// A WebSocket upgrade is joined to the origin instead when the origin
// switches (origin.Client.Tunnel); its latency is reported as -1:
// nothing to learn about the origin's speed.
func (g *Gateway) forward(ctx *fasthttp.RequestCtx, kind, p string) (failed bool, latency time.Duration) {
	upgrade := origin.IsUpgrade(&ctx.Request.Header)
	f := g.o.Identity.Forwarded(ctx)
	g.o.Upstream.Prepare(&ctx.Request, f, g.o.Identity.OwnCookie)
	if p != "" {
		ctx.Request.Header.Set(pass.HeaderName, p)
	}
	if upgrade {
		joined, err := g.tunnel(ctx, f.Client)
		switch {
		case err == nil && joined:
			g.m.requests.WithLabelValues(kind, "upgraded").Inc()
			return false, -1
		case err == nil:
			g.m.answered(kind, ctx.Response.StatusCode())
			return ctx.Response.StatusCode() >= 500, -1
		}
		g.failed(ctx, kind, err)
		return true, -1
	}
	start := time.Now()
	err := g.o.Upstream.Forward(ctx, g.o.Identity.OwnCookie)
	latency = time.Since(start)
	g.noteForward(ctx.Response.StatusCode(), err)
	if p != "" && err == nil {
		// An answer to a passed request is the admitted visitor's: never
		// a shared cache's to hand to someone with no pass.
		privateCache(&ctx.Response.Header)
	}
	g.m.upstream.WithLabelValues(kind).Observe(latency.Seconds())
	if err != nil {
		if g.failed(ctx, kind, err) {
			return true, -1 // the request's fault: the pass is kept, nothing learnt
		}
		return true, latency
	}
	g.m.answered(kind, ctx.Response.StatusCode())
	return ctx.Response.StatusCode() >= 500, latency
}

// failed answers a forward's error; refused: the request's fault (no sign
// of the origin's health), else the origin's.
func (g *Gateway) failed(ctx *fasthttp.RequestCtx, kind string, err error) (refused bool) {
	for _, r := range refusals {
		if errors.Is(err, r.err) {
			g.m.requests.WithLabelValues(kind, r.outcome).Inc()
			writeError(ctx, r.failure)
			if r.close {
				ctx.SetConnectionClose()
			}
			return true
		}
	}
	if errors.Is(err, origin.ErrTimeout) {
		g.m.requests.WithLabelValues(kind, "timeout").Inc()
		g.o.Logger.LogAttrs(ctx, slog.LevelWarn, "gateway: origin timed out", slog.String("error", err.Error()))
		writeError(ctx, errGatewayTimeout)
		return false
	}
	g.m.requests.WithLabelValues(kind, "bad_gateway").Inc()
	// Every failure, with the request id (ctx): a 5xx is always logged.
	g.o.Logger.LogAttrs(ctx, slog.LevelWarn, "gateway: origin failed", slog.String("error", err.Error()))
	writeError(ctx, errBadGateway)
	return false
}

// record gives a protected request of visitor to the adaptive signals,
// which count each visitor once a window (sampler).
func (g *Gateway) record(room, visitor string, latency time.Duration, failed bool) {
	if latency >= 0 {
		g.samples.add(room, visitor, latency, failed, time.Now())
	}
}

// passID is a pass's random id (jti).
func passID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// unavailable answers 503 for a failure of the gateway's own (Redis, a
// signature), logged at warn with the request id (ctx): every 5xx is.
func (g *Gateway) unavailable(ctx *fasthttp.RequestCtx, what string, err error) {
	g.o.Logger.LogAttrs(ctx, slog.LevelWarn, "gateway: "+what+" failed", slog.String("error", err.Error()))
	writeError(ctx, errUnavailable)
}

// sign signs a pass, or answers 503 and returns "".
func (g *Gateway) sign(ctx *fasthttp.RequestCtx, c pass.Claims) string {
	p, err := g.o.Signer.Sign(c)
	if err != nil {
		g.o.Logger.LogAttrs(ctx, slog.LevelError, "gateway: signing a pass", slog.String("error", err.Error()))
		writeError(ctx, errUnavailable)
		return ""
	}
	return p
}
