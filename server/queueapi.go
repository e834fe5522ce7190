package server

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"waitingroom/queue"
	"waitingroom/server/api"
	"waitingroom/server/queuestatus"
	"waitingroom/server/ratelimit"
	"waitingroom/server/ratelimit/httplimit"
	"waitingroom/server/token"
)

// enter puts the caller in the room's queue (or reports where they are) and
// issues the queue token, also set as the HttpOnly wr_queue cookie.
func (s *Server) enter(c *fiber.Ctx) error {
	user, err := s.enterer(c)
	if err != nil {
		return err
	}
	room := roomParam(c)
	st, err := s.enterRoom(c, room, user)
	if err != nil {
		return err
	}
	if st.New {
		s.m.ObserveEnter(room, st.State == queue.Ready) // Ready at once: passthrough
	}
	tok, err := s.setQueueToken(c, user, room, st.Ticket)
	if err != nil {
		return err
	}
	s.setEntryCookie(c, room, st)
	doc := s.docs.Of(room, st)
	doc.QueueToken = tok
	return queuestatus.Send(c, &doc)
}

// enterRoom enters user in room under the enter limits (address and
// user; an anonymous visitor's are enterAnonymous's). Where it can — one
// Redis, a user who has no bypass — the limits are decided inside the
// enter script (queue.EnterGuarded): one script call instead of two, the
// decision the same (taken first, all or nothing, counted even when the
// room then refuses the entry). Else they are decided first (rl.All), and
// the user entered or, on the bypass list, granted.
func (s *Server) enterRoom(c *fiber.Ctx, room, user string) (queue.Status, error) {
	if s.anonymous(user) {
		return s.enterAnonymous(c, room, user)
	}
	checks := []ratelimit.Check{
		{Name: "enter_ip", Subject: s.clientKey(c), Limit: s.cfg.Limits.EnterIP},
		{Name: "enter_user", Subject: user, Limit: s.cfg.Limits.EnterUser}}
	bypass := s.acl.Current().Bypass.HasUser(user)
	if !bypass && s.rl.Applies(c, user) {
		if st, ok, err := s.enterInline(c, room, user, checks, nil); ok {
			return st, err
		}
	}
	if err := s.rl.All(c, user, true, checks...); err != nil {
		return queue.Status{}, err
	}
	return s.enterOrGrant(c, room, user, bypass)
}

// enterInline enters user with checks decided inside the enter script;
// ok is false where that cannot be (a Redis Cluster). A refusal is
// answered by enterRefused (proof: the visitor's, or nil).
func (s *Server) enterInline(c *fiber.Ctx, room, user string, checks []ratelimit.Check, proof *visitorProof) (st queue.Status, ok bool, err error) {
	guard, ok := s.limiter.Inline(checks...)
	if !ok {
		return queue.Status{}, false, nil
	}
	st, err = s.q.EnterGuarded(c.UserContext(), room, user, guard)
	var refused *ratelimit.RefusedError
	switch {
	case errors.As(err, &refused):
		return queue.Status{}, true, s.enterRefused(c, room, checks, refused.Results, proof)
	case errors.Is(err, ratelimit.ErrBadRefusal):
		return queue.Status{}, true, errors.Join(api.ErrUnavailable, err)
	}
	return st, true, err
}

// enterOrGrant enters user, or grants the entry to one on the bypass list.
func (s *Server) enterOrGrant(c *fiber.Ctx, room, user string, bypass bool) (queue.Status, error) {
	ctx := c.UserContext()
	if !bypass {
		return s.q.Enter(ctx, room, user)
	}
	s.log.LogAttrs(ctx, slog.LevelWarn, "audit: queue bypass", slog.String("room", room),
		slog.String("user", user), slog.String("ip", s.clientIP(c)))
	return s.q.Grant(ctx, room, user)
}

// enterer is who enters: the user of the access token, or in gateway mode
// without one, the anonymous visitor (visitor).
func (s *Server) enterer(c *fiber.Ctx) (string, error) {
	if s.gw != nil && c.Get(fiber.HeaderAuthorization) == "" {
		return s.visitor(c)
	}
	claims, err := s.accessClaims(c)
	if err != nil {
		return "", err
	}
	return claims.Subject, nil
}

// setQueueToken issues a queue token for user's ticket in room and sets it
// as the HttpOnly queue cookie: over HTTPS (client.Resolver.HTTPS) Secure
// and named __Host-wr_queue with Path=/ (the prefix requires it), else
// wr_queue with Path=/api/v1 (Path=/ in gateway mode). SameSite=Lax either
// way; package crosssite refuses what Lax lets through.
func (s *Server) setQueueToken(c *fiber.Ctx, user, room string, ticket int64) (string, error) {
	tok, err := s.tokens.IssueQueue(user, room, ticket, s.cfg.QueueTTL)
	if err != nil {
		return "", err
	}
	ck := s.queueCookieAt(c, room)
	ck.Value, ck.MaxAge = tok, int(s.cfg.QueueTTL.Seconds())
	c.Cookie(ck)
	return tok, nil
}

// queueCookieAt is the queue cookie's name, path and flags for this request.
func (s *Server) queueCookieAt(c *fiber.Ctx, room string) *fiber.Cookie {
	name := s.queueCookieName(room)
	ck := &fiber.Cookie{Name: name, Path: s.queueCookiePath(), HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode}
	if s.clients.HTTPS(c.Context()) {
		ck.Name, ck.Path, ck.Secure = "__Host-"+name, "/", true
	}
	return ck
}

// clearQueueCookie deletes the queue cookie: a browser deletes a cookie only
// when name, path (and, for __Host-, Secure) match the ones it was set
// with. The plain cookie is cleared at its path whatever the scheme (it may
// date from before HTTPS was in front), the __Host- one over HTTPS.
func (s *Server) clearQueueCookie(c *fiber.Ctx, room string) {
	gone := func(ck *fiber.Cookie) *fiber.Cookie {
		ck.Value, ck.MaxAge, ck.Expires = "", -1, time.Unix(0, 0)
		return ck
	}
	ck := s.queueCookieAt(c, room)
	c.Cookie(gone(ck))
	if plain := s.queueCookieName(room); ck.Name != plain {
		c.Cookie(gone(&fiber.Cookie{Name: plain, Path: s.queueCookiePath(), HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode, Secure: true}))
	}
}

// queueCookiePath is the plain queue cookie's path: the API's, or in
// gateway mode every path (the gateway reads it on the origin's).
func (s *Server) queueCookiePath() string {
	if s.gw != nil {
		return "/"
	}
	return "/api/v1"
}

// roomParam returns the {room} path parameter as a string of its own:
// Fiber reuses the request's memory after the handler returns, and room
// names outlive it (hub state, metric labels).
func roomParam(c *fiber.Ctx) string { return strings.Clone(c.Params("room")) }

// roomClaims verifies the queue token and that it belongs to the path's room.
func (s *Server) roomClaims(c *fiber.Ctx) (*token.Claims, string, error) {
	room := roomParam(c)
	claims, err := s.queueClaims(c, room)
	if err != nil {
		return nil, "", err
	}
	if claims.Room != room {
		return nil, "", errWrongRoom
	}
	return claims, room, nil
}

// position answers a poll: no BCrypt, no SQL; from the hub's memory when
// its room state is fresh (at the front once confirmed exact: see
// currentStatus), else one Redis script.
func (s *Server) position(c *fiber.Ctx) error {
	claims, room, err := s.roomClaims(c)
	if err != nil {
		return err
	}
	st, err := s.currentStatus(c.UserContext(), room, claims)
	if err != nil {
		return s.notInQueue(c, err)
	}
	doc := s.docs.Of(room, st)
	if st.State == queue.Waiting || st.State == queue.Closed {
		// Present until a few of the intervals just told have passed.
		s.presence.Seen(room, claims.Subject, time.Duration(doc.PollAfterMs)*time.Millisecond)
	}
	s.setEntryCookie(c, room, st)
	if st.Ticket != 0 && st.Ticket != claims.Seq {
		// The ticket was given after the token (at a scheduled opening): a
		// token carrying it lets later polls be answered from memory.
		if doc.QueueToken, err = s.setQueueToken(c, claims.Subject, room, st.Ticket); err != nil {
			return err
		}
	}
	// A refresh storm is refused at its band's own pace; the place is kept.
	// READY says pollAfterMs 0 (nothing left to wait for): its polls are
	// paced as if it said httplimit.PollFloor, so a storm of READY polls is
	// refused like any other. The pace is kept in this instance's memory
	// (httplimit.Limits.Poll): a poll answered from memory makes no Redis
	// round trip at all.
	pollAfter := max(time.Duration(doc.PollAfterMs)*time.Millisecond, httplimit.PollFloor)
	if err := s.rl.Poll(c, room, claims.Subject, pollAfter); err != nil {
		return err
	}
	return queuestatus.Send(c, &doc)
}

// leave gives up the caller's place or entry window. A caller the
// admission run dropped as idle had nothing left to give up: 404 with the
// reason (the cookie is cleared all the same).
func (s *Server) leave(c *fiber.Ctx) error {
	claims, room, err := s.roomClaims(c)
	if err != nil {
		return err
	}
	res, err := s.q.Leave(c.UserContext(), room, claims.Subject)
	if err != nil {
		return err
	}
	s.clearQueueCookie(c, room)
	if res.Idle {
		return s.notInQueue(c, queue.ErrIdle)
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// exactBand: users at these positions (or within the room's targetActive)
// are the next to be admitted; their polls must see READY the moment it
// happens, not one pub/sub hop later. They are answered by the hub's
// PositionNow (memory, after one read of the room's event number shared
// by every poll in flight on this instance), else by Redis.
const exactBand = 100

// currentStatus answers from the hub's memory when it is fresh — at the
// front only once confirmed exact (PositionNow) — else from Redis (the
// judge).
func (s *Server) currentStatus(ctx context.Context, room string, claims *token.Claims) (queue.Status, error) {
	st, ok := s.hub.Position(room, claims.Seq)
	if ok && st.Position > max(exactBand, st.Target) {
		return st, nil
	}
	if ok {
		if st, ok = s.hub.PositionNow(ctx, room, claims.Seq); ok {
			return st, nil
		}
	}
	return s.q.Status(ctx, room, claims.Subject)
}
