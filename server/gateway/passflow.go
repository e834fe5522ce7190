package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"log/slog"
	"math"
	"net"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"waitingroom/queue"
	"waitingroom/server/pass"
	"waitingroom/server/ratelimit"
	"waitingroom/server/token"
)

// What happens to a protected request (the package doc has the rest):
//
//   - A protected request carries a pass or is refused: a page navigation
//     gets 303 to the room's waiting page (which brings the visitor back to
//     the same URL once admitted), anything else 403 pass_required with the
//     room and the page's URL.
//   - Pass mode "once" (the default): the entry token, from the entry cookie
//     the waiting room's API sets at READY or from X-Entry-Token, is consumed
//     atomically before the request is forwarded; the slot is released when
//     the origin answers anything but a 5xx, and the token restored when it
//     fails or times out, at most MaxRestores times and within its entry
//     window, so the visitor can retry (with the same pass id). Mode
//     "session": the first protected request opens a session (a signed
//     cookie; its id recorded in Redis with the slot) that holds its slot
//     toward targetActive for sessionTtl after each protected request, up
//     to sessionMaxTtl, paced by the room's session limits (queue.Hold);
//     leave and a new admission end it.
//   - Every protected request forwarded carries the Waitingroom-Pass header,
//     an Ed25519-signed JWT (package pass) the origin can verify with the
//     keys at /_wr/.well-known/jwks.json (package pass/passcheck for Go).
//   - Protected requests' latency and failures (5xx, timeouts) feed the
//     adaptive controller's signals, one visitor at a time (signals.go):
//     admission follows the origin.
//   - The origin failing, slow or oversized is 502 bad_gateway or 504
//     gateway_timeout in the contract's JSON.

// settleTimeout bounds the Redis call that settles a pass after the
// origin answered: the answer is decided and must not wait long, nor be
// lost because the client went away.
const settleTimeout = time.Second

// MaxRestores is how many times a once pass survives the origin failing
// (a 5xx, a timeout, no answer): the visitor may retry that often, within
// the entry window the pass had. A failure may still have done its work
// (a 504 says nothing of what the origin did), so retries are few, and
// every retry carries the same pass id (jti) for the origin to refuse a
// second order.
const MaxRestores = 2

// once serves a protected request in pass mode "once". A visit cookie
// of the room still valid lets it through with the visit's pass, with no
// Redis call (visit). Else the entry token (cookie or X-Entry-Token) is
// consumed atomically before the request is forwarded; the slot is
// released when the origin answers anything but a 5xx, and the answer
// opens the visit; the token is restored when the origin fails or times
// out, at most MaxRestores times, so the visitor can retry. It returns
// false when the request carries no usable pass; stale: the visit cookie
// is to be cleared (whatever the answer).
func (g *Gateway) once(ctx *fasthttp.RequestCtx, room string, st Settings) (done, stale bool) {
	if raw := ctx.Request.Header.Cookie(VisitCookie(room)); len(raw) > 0 {
		if g.visit(ctx, room, st, string(raw)) {
			return true, false
		}
		stale = true
	}
	cookie := len(ctx.Request.Header.Cookie(EntryCookie(room))) > 0 // read before forwarding drops it
	claim, ok, answered := g.consumeEntry(ctx, room, g.inFlight(), "", "")
	if !ok {
		return answered, stale
	}
	now, id, end := time.Now(), oncePassID(claim), claim.Deadline.Add(st.VisitTTL)
	p := g.sign(ctx, pass.Claims{Room: room, Subject: claim.User, PassID: id, Mode: pass.ModeOnce, IssuedAt: now, Expiry: end})
	if p == "" {
		g.settle(ctx, claim, true)
		return true, false
	}
	visit, err := g.o.Tokens.IssueVisit(claim.User, room, id, end)
	if err != nil {
		g.settle(ctx, claim, true)
		g.unavailable(ctx, "issuing a visit", err)
		return true, false
	}
	failed, latency := g.through(ctx, kindProtected, p)
	g.record(room, claim.User, latency, failed)
	if g.settle(ctx, claim, failed) {
		return true, false // kept for a retry: no visit yet
	}
	secure := g.secure(ctx)
	if !failed {
		setCookie(ctx, VisitCookie(room), visit, time.Until(end), secure)
	}
	// Forward auth relays one Set-Cookie at most (nginx's auth_request_set
	// reads the first): the spent entry cookie ages out by itself there,
	// and costs nothing while the visit cookie is checked first.
	if cookie && (failed || !g.auth) {
		expireCookie(ctx, EntryCookie(room), secure)
	}
	return true, false
}

// visit serves a protected request with the visit cookie raw: the
// visit's own pass (its id, the same as the pass that opened it; its end),
// within the room's in-flight limit per visit on this instance. It
// returns false when raw is no visit of room's (expired, forged, another
// room's).
func (g *Gateway) visit(ctx *fasthttp.RequestCtx, room string, st Settings, raw string) bool {
	c, err := g.o.Tokens.Parse(raw, token.KindVisit)
	if err != nil || c.Room != room {
		return false
	}
	now := time.Now()
	key := room + "\x00v" + c.ID
	if wait, ok := g.decided(key, st); !ok {
		g.limited(ctx, wait)
		return true
	}
	release, wait, ok := g.gate.acquire(key, g.inFlightLimit(st), now)
	if !ok {
		g.limited(ctx, wait)
		return true
	}
	defer release()
	p := g.signFor(ctx, key, pass.Claims{Room: room, Subject: c.Subject, PassID: c.ID, Mode: pass.ModeOnce, IssuedAt: now, Expiry: c.ExpiresAt.Time}, now)
	if p == "" {
		return true
	}
	failed, latency := g.through(ctx, kindProtected, p)
	g.record(room, c.Subject, latency, failed)
	return true
}

// inFlightLimit is how many requests of one visit or session may be in
// flight at once on this instance: sessionInFlight, or no count in forward
// auth, which sees a decision but not the request's end (a decision of its
// own is no request in flight). There a visit's decisions are bounded by
// DecisionHold instead, and a session's rate, kept in Redis, holds all the
// same.
func (g *Gateway) inFlightLimit(st Settings) int {
	if g.auth {
		return math.MaxInt
	}
	return st.SessionInFlight
}

// DecisionHold is how long forward auth counts a visit's decision as a
// request in flight: it sees the decision, not the request's end. A
// visit may have at most the room's sessionInFlight decisions per
// DecisionHold on one instance (80 a second with the defaults), and twice
// as many at once after a quiet spell (a page's assets asked for together
// over HTTP/2): one visit cookie shared by a crowd of clients gets no more.
// In gateway mode requests in flight are counted as they are.
const DecisionHold = 200 * time.Millisecond

// decided takes one of a forward-auth visit's decisions (DecisionHold);
// not ok: the visit is over its bound for wait more. Always ok in gateway
// mode.
func (g *Gateway) decided(key string, st Settings) (wait time.Duration, ok bool) {
	if !g.auth {
		return 0, true
	}
	r := g.decisions.Allow(key, ratelimit.Limit{Rate: st.SessionInFlight, Per: DecisionHold, Burst: 2 * st.SessionInFlight})
	return r.RetryAfter, r.Allowed
}

// inFlight is how long a consumed entry token keeps its slot before it
// is settled: twice the origin's timeout, or a second in forward auth
// (settled at once).
func (g *Gateway) inFlight() time.Duration {
	if g.auth {
		return time.Second
	}
	return 2 * g.o.Upstream.Timeout()
}

// oncePassID is a once pass's id: the same for every retry of one entry
// token (restored after a failure), so an origin that records the ids of
// the orders it placed refuses a retry of one it did place. A hash: the
// token itself never reaches the origin.
func oncePassID(c queue.Claim) string {
	h := sha256.Sum256([]byte("waitingroom once pass\x00" + c.Room + "\x00" + c.User + "\x00" + c.Token))
	return base64.RawURLEncoding.EncodeToString(h[:12])
}

// consumeEntry spends the request's entry token for room (the queue
// token's user, the entry cookie or X-Entry-Token), keeping the slot for
// inFlight; session, when not "", is the session the token opens, bound
// to network. Not ok: the request holds no usable token (answered false:
// the caller refuses it), or Redis could not say (answered: 503 written).
func (g *Gateway) consumeEntry(ctx *fasthttp.RequestCtx, room string, inFlight time.Duration, session, network string) (c queue.Claim, ok, answered bool) {
	user, tok := g.o.Identity.QueueUser(ctx, room), entryToken(ctx, room)
	if user == "" || tok == "" {
		return c, false, false
	}
	var err error
	if session != "" {
		c, err = g.o.Slots.ConsumeSession(ctx, room, user, tok, session, network, inFlight)
	} else {
		c, err = g.o.Slots.Consume(ctx, room, user, tok, inFlight)
	}
	switch {
	case errors.Is(err, queue.ErrEntryTokenInvalid):
		return c, false, false
	case err != nil:
		g.unavailable(ctx, "consuming an entry token", err)
		return c, false, true
	}
	return c, true, false
}

// settle releases a consumed token's slot, or restores the token after a
// failure while it has restores left. It returns whether the token is
// kept for a retry.
func (g *Gateway) settle(ctx context.Context, c queue.Claim, failed bool) (kept bool) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	var err error
	if failed {
		kept, err = g.o.Slots.RestoreAtMost(sctx, c, MaxRestores)
		if errors.Is(err, queue.ErrRestoresSpent) {
			_, err = g.o.Slots.Release(sctx, c)
		}
	} else {
		_, err = g.o.Slots.Release(sctx, c)
	}
	if err != nil {
		g.o.Logger.LogAttrs(ctx, slog.LevelWarn, "gateway: settling a pass failed", slog.String("room", c.Room),
			slog.Bool("restore", failed), slog.String("error", err.Error()))
	}
	return kept
}

// session serves a protected request in pass mode "session": a session
// cookie whose slot is still held, and which is the visitor's current
// session, is extended by this request within the session's limits; else
// an entry token is consumed and opens a session. It returns false when
// the request carries no usable pass; stale: the session cookie is to be
// cleared (whatever the answer).
func (g *Gateway) session(ctx *fasthttp.RequestCtx, room string, st Settings) (done, stale bool) {
	if raw := ctx.Request.Header.Cookie(SessionCookie(room)); len(raw) > 0 {
		c, err := g.o.Tokens.Parse(string(raw), token.KindSession)
		if err == nil && c.Room == room {
			key := room + "\x00" + c.ID
			release, wait, ok := g.gate.acquire(key, g.inFlightLimit(st), time.Now())
			if !ok {
				g.limited(ctx, wait)
				return true, false
			}
			defer release()
			claim := queue.Claim{Room: room, User: c.Subject, Session: c.ID}
			use := queue.SessionUse{Network: g.network(ctx, st), Rate: st.SessionRate, Burst: st.SessionBurst}
			held, err := g.o.Slots.Hold(ctx, claim, st.SessionTTL, c.ExpiresAt.Time, use)
			switch {
			case err != nil:
				g.unavailable(ctx, "holding a session's slot", err)
				return true, false
			case held.Limited:
				now := time.Now()
				g.gate.over(key, now.Add(held.RetryAfter), now)
				g.limited(ctx, held.RetryAfter)
				return true, false
			case held.Elsewhere:
				// Not this client's session: it may open its own, and
				// the session's owner keeps it.
				return g.openSession(ctx, room, st), false
			case held.OK:
				p := g.signFor(ctx, key, pass.Claims{Room: room, Subject: c.Subject, PassID: c.ID, Mode: pass.ModeSession,
					IssuedAt: c.IssuedAt.Time, Expiry: held.Deadline}, time.Now())
				if p != "" {
					g.sessionThrough(ctx, room, c.Subject, p)
				}
				return true, false
			}
		}
		stale = true
	}
	return g.openSession(ctx, room, st), stale
}

// openSession consumes the request's entry token into a session: the slot
// is held for SessionTTL after each protected request, up to SessionMax.
func (g *Gateway) openSession(ctx *fasthttp.RequestCtx, room string, st Settings) bool {
	cookie := len(ctx.Request.Header.Cookie(EntryCookie(room))) > 0 // read before forwarding drops it
	now := time.Now()
	id, end := passID(), now.Add(st.SessionMax)
	claim, ok, answered := g.consumeEntry(ctx, room, st.SessionTTL, id, g.network(ctx, st))
	if !ok {
		return answered
	}
	user := claim.User
	session, err := g.o.Tokens.IssueSession(user, room, id, now, end)
	if err != nil {
		g.settle(ctx, claim, true)
		g.unavailable(ctx, "issuing a session", err)
		return true
	}
	p := g.sign(ctx, pass.Claims{Room: room, Subject: user, PassID: id, Mode: pass.ModeSession, IssuedAt: now, Expiry: now.Add(st.SessionTTL)})
	if p == "" {
		g.settle(ctx, claim, true)
		return true
	}
	release, _, _ := g.gate.acquire(room+"\x00"+id, g.inFlightLimit(st), now)
	defer release()
	g.sessionThrough(ctx, room, user, p)
	secure := g.secure(ctx)
	setCookie(ctx, SessionCookie(room), session, st.SessionMax, secure)
	if cookie && !g.auth { // one Set-Cookie at most in forward auth (once)
		expireCookie(ctx, EntryCookie(room), secure)
	}
	return true
}

// sessionThrough lets a request of a session through: the origin's
// failures end nothing (the session holds its slot until it ends or goes
// idle).
func (g *Gateway) sessionThrough(ctx *fasthttp.RequestCtx, room, user, p string) {
	failed, latency := g.through(ctx, kindProtected, p)
	g.record(room, user, latency, failed)
}

// limited answers a session's request over its limits: 429 rate_limited
// with the time to wait. The session is kept.
func (g *Gateway) limited(ctx *fasthttp.RequestCtx, wait time.Duration) {
	g.m.requests.WithLabelValues(kindProtected, "rate_limited").Inc()
	writeJSON(ctx, fasthttp.StatusTooManyRequests, max(int(math.Ceil(wait.Seconds())), 1), map[string]string{"error": "rate_limited",
		"message": "too many requests for one session: slow down and retry after Retry-After seconds"})
}

// network is the client network a session is bound to in room: the
// client's /24 (IPv4) or /64 (IPv6) when the room's sessionNetwork is on,
// else "" (not bound).
func (g *Gateway) network(ctx *fasthttp.RequestCtx, st Settings) string {
	if !st.SessionNetwork {
		return ""
	}
	ip := g.o.Identity.Forwarded(ctx).Client
	if v4 := ip.To4(); v4 != nil {
		return v4.Mask(net.CIDRMask(24, 32)).String() + "/24"
	}
	if len(ip) == net.IPv6len {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return "?" // no address: a network of its own, never another's
}

// secure reports whether the gateway's cookies get the Secure attribute.
func (g *Gateway) secure(ctx *fasthttp.RequestCtx) bool {
	return g.o.Identity.Forwarded(ctx).Proto == "https"
}

// sessionGate is this instance's part of a session's limits: its
// requests in flight, and until when it is known to be over its rate (so
// that a flood on a shared cookie is refused here, not by a Redis call
// each). Keys are room and session id.
type sessionGate struct {
	mu    sync.Mutex
	n     map[string]int
	until map[string]time.Time
}

// maxLimited bounds the sessions remembered as over their rate.
const maxLimited = 1 << 16

// acquire takes one of key's at most limit places in flight; release gives
// it back. Not ok: the session is at its limit, or over its rate for wait
// more.
func (f *sessionGate) acquire(key string, limit int, now time.Time) (release func(), wait time.Duration, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if u, over := f.until[key]; over {
		if wait = u.Sub(now); wait > 0 {
			return func() {}, wait, false
		}
		delete(f.until, key)
	}
	if f.n[key] >= limit {
		return func() {}, time.Second, false
	}
	if f.n == nil {
		f.n = map[string]int{}
	}
	f.n[key]++
	return func() {
		f.mu.Lock()
		if f.n[key]--; f.n[key] <= 0 {
			delete(f.n, key)
		}
		f.mu.Unlock()
	}, 0, true
}

// over remembers that key is over its rate until then.
func (f *sessionGate) over(key string, until, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.until) >= maxLimited {
		for k, u := range f.until {
			if !u.After(now) {
				delete(f.until, k)
			}
		}
		if len(f.until) >= maxLimited {
			clear(f.until)
		}
	}
	if f.until == nil {
		f.until = map[string]time.Time{}
	}
	f.until[key] = until
}
