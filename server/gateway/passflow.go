package gateway

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/valyala/fasthttp"

	"waitingroom/queue"
	"waitingroom/server/pass"
	"waitingroom/server/token"
)

// settleTimeout bounds the Redis call that settles a pass after the
// origin answered: the answer is decided and must not wait long, nor be
// lost because the client went away.
const settleTimeout = time.Second

// restoreGrace is how long a restored pass stays usable at least, so a
// visitor whose request the origin failed near the window's end can retry.
const restoreGrace = 30 * time.Second

// oncePassTTL is the lifetime of a once pass at the origin: it proves one
// request, now.
const oncePassTTL = time.Minute

// once serves a protected request in pass mode "once": the entry token
// (cookie or X-Entry-Token) is consumed atomically before the request is
// forwarded; the slot is released when the origin answers anything but a
// 5xx, and the token restored when it fails or times out, so the visitor
// can retry. It returns false when the request carries no usable pass.
func (g *Gateway) once(ctx *fasthttp.RequestCtx, room string) bool {
	claim, ok, answered := g.consumeEntry(ctx, room, 2*g.o.Upstream.timeout)
	if !ok {
		return answered
	}
	user := claim.User
	now := time.Now()
	p := g.sign(ctx, pass.Claims{Room: room, Subject: user, PassID: passID(), Mode: pass.ModeOnce, IssuedAt: now, Expiry: now.Add(oncePassTTL)})
	if p == "" {
		g.settle(ctx, claim, true)
		return true
	}
	failed, latency := g.forward(ctx, "protected", p)
	g.record(room, latency, failed)
	g.settle(ctx, claim, failed)
	if !failed {
		clearCookie(ctx, EntryCookie(room))
	}
	return true
}

// consumeEntry spends the request's entry token for room (the queue
// token's user, the entry cookie or X-Entry-Token), keeping the slot for
// inFlight. Not ok: the request holds no usable token (answered false:
// the caller refuses it), or Redis could not say (answered: 503 written).
func (g *Gateway) consumeEntry(ctx *fasthttp.RequestCtx, room string, inFlight time.Duration) (c queue.Claim, ok, answered bool) {
	user, tok := g.o.Identity.QueueUser(ctx, room), entryToken(ctx, room)
	if user == "" || tok == "" {
		return c, false, false
	}
	c, err := g.o.Slots.Consume(ctx, room, user, tok, inFlight)
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
// failure.
func (g *Gateway) settle(ctx context.Context, c queue.Claim, failed bool) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	var err error
	if failed {
		_, err = g.o.Slots.Restore(sctx, c, restoreGrace)
	} else {
		_, err = g.o.Slots.Release(sctx, c)
	}
	if err != nil {
		g.o.Logger.LogAttrs(ctx, slog.LevelWarn, "gateway: settling a pass failed", slog.String("room", c.Room),
			slog.Bool("restore", failed), slog.String("error", err.Error()))
	}
}

// session serves a protected request in pass mode "session": a session
// cookie whose slot is still held is extended by this request; else an
// entry token is consumed and opens a session. It returns false when the
// request carries no usable pass.
func (g *Gateway) session(ctx *fasthttp.RequestCtx, room string, st Settings) bool {
	if raw := ctx.Request.Header.Cookie(SessionCookie(room)); len(raw) > 0 {
		c, err := g.o.Tokens.Parse(string(raw), token.KindSession)
		if err == nil && c.Room == room {
			held, ok, err := g.o.Slots.Hold(ctx, queue.Claim{Room: c.Room, User: c.Subject}, st.SessionTTL, c.ExpiresAt.Time)
			if err != nil {
				g.unavailable(ctx, "holding a session's slot", err)
				return true
			}
			if ok {
				p := g.sign(ctx, pass.Claims{Room: room, Subject: c.Subject, PassID: c.ID, Mode: pass.ModeSession,
					IssuedAt: c.IssuedAt.Time, Expiry: held})
				if p != "" {
					g.forwardSession(ctx, room, p)
				}
				return true
			}
		}
		clearCookie(ctx, SessionCookie(room))
	}
	return g.openSession(ctx, room, st)
}

// openSession consumes the request's entry token into a session: the slot
// is held for SessionTTL after each protected request, up to SessionMax.
func (g *Gateway) openSession(ctx *fasthttp.RequestCtx, room string, st Settings) bool {
	claim, ok, answered := g.consumeEntry(ctx, room, st.SessionTTL)
	if !ok {
		return answered
	}
	user := claim.User
	now := time.Now()
	id, end := passID(), now.Add(st.SessionMax)
	cookie, err := g.o.Tokens.IssueSession(user, room, id, now, end)
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
	g.forwardSession(ctx, room, p)
	setCookie(ctx, SessionCookie(room), cookie, st.SessionMax, g.o.Identity.Forwarded(ctx).Proto == "https")
	clearCookie(ctx, EntryCookie(room))
	return true
}

// forwardSession forwards a request of a session: the origin's failures
// end nothing (the session holds its slot until it ends or goes idle).
func (g *Gateway) forwardSession(ctx *fasthttp.RequestCtx, room, p string) {
	failed, latency := g.forward(ctx, "protected", p)
	g.record(room, latency, failed)
}
