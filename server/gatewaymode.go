package server

import (
	"bytes"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"waitingroom/queue"
	"waitingroom/server/access"
	"waitingroom/server/api"
	"waitingroom/server/client"
	"waitingroom/server/gateway"
	"waitingroom/server/gateway/origin"
	"waitingroom/server/protocol"
	"waitingroom/server/token"
)

// Gateway mode (package gateway): with an origin set, the public port is
// a reverse proxy in front of that origin. The waiting room's own page and
// API move under gateway.Prefix (/_wr/...); every other path is the
// origin's, answered by the gateway below Fiber: unprotected requests are
// forwarded at once (no Redis call), protected ones (the configured routes
// and the rooms' own) need a pass. Visitors are anonymous: enter without an
// access token gives them a signed identity in an HttpOnly cookie.

// visitorCookie holds an anonymous visitor's identity (token.KindVisitor);
// a visitor's id starts with visitorPrefix (a user's is a number).
const (
	visitorCookie = "wr_visitor"
	visitorPrefix = "v-"
)

// GatewayIdentity is what the gateway asks of the waiting room about a
// request (gateway.Options.Identity): its client as cfg's trusted proxies
// tell it, and the user of the room's queue cookie, checked with tokens
// and acl's deny list. The composition root builds it from the Config it
// gives New, before the gateway and the Server.
func GatewayIdentity(cfg Config, tokens *token.Issuer, acl *access.Lists) gateway.Identity {
	return gatewayIdentity{clients: cfg.clients(), tokens: tokens, acl: acl}
}

type gatewayIdentity struct {
	clients client.Resolver
	tokens  *token.Issuer
	acl     *access.Lists
}

func (g gatewayIdentity) Forwarded(ctx *fasthttp.RequestCtx) origin.Forwarded {
	f := origin.Forwarded{Client: g.clients.Addr(ctx), Peer: ctx.RemoteIP(), Proto: "http", Host: string(ctx.Host())}
	if g.clients.ViaProxy(ctx) {
		f.Chain = strings.TrimSpace(string(ctx.Request.Header.Peek(fiber.HeaderXForwardedFor)))
	}
	if g.clients.HTTPS(ctx) {
		f.Proto = "https"
	}
	return f
}

func (g gatewayIdentity) QueueUser(ctx *fasthttp.RequestCtx, room string) string {
	raw := queueCookieValue(true, ctx.Request.Header.Cookie, room)
	if raw == "" {
		return ""
	}
	c, err := g.tokens.Parse(raw, token.KindQueue)
	if err != nil || c.Room != room || deniedUser(g.acl, c.Subject) != nil {
		return ""
	}
	return c.Subject
}

// OwnCookie reports whether a cookie is one of the waiting room's: the
// queue cookies, the entry and session cookies, the visitor's identity
// (under either name). An origin's own cookies pass, whatever their name.
func (gatewayIdentity) OwnCookie(name []byte) bool {
	name = bytes.TrimPrefix(name, []byte("__Host-"))
	for _, own := range [...]string{queueCookie, "wr_entry_", "wr_visit_", "wr_session_", visitorCookie} {
		if bytes.HasPrefix(name, []byte(own)) {
			return true
		}
	}
	return false
}

// gatewayPaths says where a request of the public port goes in gateway
// mode: toOrigin, a path outside gateway.Prefix (the origin's); auth,
// forward auth's question. Both are checked by the protocol filter as the
// origin's requests are: forward auth's question carries the original
// request's headers (a Content-Encoding among them). Both false outside
// gateway mode.
func (s *Server) gatewayPaths(ctx *fasthttp.RequestCtx, gatewayMode bool) (toOrigin, auth bool) {
	toOrigin = gatewayMode && !ownPath(ctx.Path())
	auth = gatewayMode && s.gw.ForwardAuth() && gateway.IsAuthPath(ctx.Path())
	return toOrigin, auth
}

// dispatch answers a request the protocol filter let in, by mode: forward
// auth's question; a path of the origin's (the gateway's, or 404 in
// forward auth, where the site's proxy routes it); else the waiting
// room's own (next), its streamed body (gateway mode) held to
// Config.BodyLimit first.
func (s *Server) dispatch(ctx *fasthttp.RequestCtx, next fasthttp.RequestHandler, toOrigin, auth bool) {
	switch {
	case auth:
		s.authorize(ctx)
	case toOrigin && s.gw.ForwardAuth():
		s.notForwarded.Write(ctx)
	case toOrigin:
		s.toOrigin(ctx)
	case ctx.Request.IsBodyStream():
		if r := protocol.BufferBody(ctx, s.cfg.BodyLimit); r != nil {
			r.Write(ctx) // the origin's limit let it in; the waiting room's does not
			return
		}
		next(ctx)
	default:
		next(ctx)
	}
}

// notForwarded is the answer to a path outside gateway.Prefix in forward
// auth, where the site's own proxy routes the origin's paths; forwardAuth
// is the name of forward auth's switch.
func notForwarded(forwardAuth string) *protocol.Refusal {
	return protocol.NotFound("forward auth (" + forwardAuth + "=on): this port serves " + gateway.Prefix + "/ only; the site's proxy routes the rest and asks " + gateway.AuthPath)
}

// authorize answers forward auth's question (gateway.Authorize), from a
// trusted proxy only.
func (s *Server) authorize(ctx *fasthttp.RequestCtx) {
	d := &s.acl.Current().Deny
	s.gw.Authorize(ctx, s.clients.ViaProxy(ctx), d.HasNets() && d.HasIP(s.clients.Addr(ctx)))
}

// toOrigin hands a request for the origin to the gateway, unless its
// address is denied.
func (s *Server) toOrigin(ctx *fasthttp.RequestCtx) {
	if d := &s.acl.Current().Deny; d.HasNets() && d.HasIP(s.clients.Addr(ctx)) {
		protocol.Denied.Write(ctx)
		return
	}
	// The origin sees the id the client will see: its log lines match.
	ctx.Request.Header.Set(api.RequestIDHeader, api.RequestID(ctx))
	s.gw.Handle(ctx)
}

// ownPath reports whether a path is the waiting room's own in gateway mode.
func ownPath(path []byte) bool {
	p := []byte(gateway.Prefix)
	return bytes.Equal(path, p) || (bytes.HasPrefix(path, p) && path[len(p)] == '/')
}

// visitor is the anonymous visitor of an enter without an access token: the
// identity of its cookie, or a new one (set as the cookie). Only in
// gateway mode; elsewhere enter needs an access token.
func (s *Server) visitor(c *fiber.Ctx) (string, error) {
	if raw := c.Cookies(visitorCookie); raw != "" {
		if v, err := s.tokens.Parse(raw, token.KindVisitor); err == nil {
			api.SetUser(c, &v.Subject) // for the access line
			return v.Subject, s.checkUser(v.Subject)
		}
	}
	id := newVisitorID()
	api.SetUser(c, &id)
	tok, err := s.tokens.IssueVisitor(id, s.cfg.VisitorTTL)
	if err != nil {
		return "", err
	}
	c.Cookie(&fiber.Cookie{Name: visitorCookie, Value: tok, Path: gateway.Prefix, HTTPOnly: true,
		SameSite: fiber.CookieSameSiteLaxMode, Secure: s.clients.HTTPS(c.Context()), MaxAge: int(s.cfg.VisitorTTL.Seconds())})
	return id, nil
}

// setEntryCookie hands an admitted visitor's entry token to the gateway:
// the entry cookie, read on the origin's protected paths.
func (s *Server) setEntryCookie(c *fiber.Ctx, room string, st queue.Status) {
	if s.gw == nil || st.State != queue.Ready || st.EntryToken == "" {
		return
	}
	c.Cookie(&fiber.Cookie{Name: gateway.EntryCookie(room), Value: st.EntryToken, Path: "/", HTTPOnly: true,
		SameSite: fiber.CookieSameSiteLaxMode, Secure: s.clients.HTTPS(c.Context()), MaxAge: max(int(time.Until(st.EntryExpires).Seconds()), 1)})
}

// jwks publishes the pass keys (gateway mode).
func (s *Server) jwks(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	c.Set(fiber.HeaderContentType, "application/jwk-set+json")
	return c.Send(s.passes.JWKS())
}

// challengeRequest is enter's body in a room that asks for a proof of work.
type challengeRequest struct {
	Challenge string `json:"challenge"`
	Solution  string `json:"solution"`
}

var (
	errChallengeRequired = &api.Error{Status: fiber.StatusForbidden, Code: "challenge_required",
		Message: "this room asks for a proof of work: GET its challenge, solve it, and send challenge and solution with enter"}
	errChallengeInvalid = &api.Error{Status: fiber.StatusForbidden, Code: "challenge_invalid",
		Message: "the challenge is unknown, expired, already used, not yours or not solved: get a new one"}
)

// challenge issues a proof-of-work challenge bound to the visitor and the
// room (GET /_wr/api/v1/rooms/{room}/challenge), its difficulty the
// room's plus the rise of the visitor's network (powDifficulty):
// {"required": false} when the room asks for none.
func (s *Server) challenge(c *fiber.Ctx) error {
	room := roomParam(c)
	if !queue.ValidRoom(room) {
		return queue.ErrRoomNotFound
	}
	st := s.gwSettings.Get(room)
	if st.Challenge != gateway.ChallengePoW {
		return c.JSON(fiber.Map{"required": false})
	}
	user, err := s.visitor(c)
	if err != nil {
		return err
	}
	ch := s.pow.Issue(room, user, s.powDifficulty(c, room))
	return c.JSON(fiber.Map{"required": true, "challenge": ch.Token, "difficulty": ch.Difficulty, "expiresAt": ch.ExpiresAt})
}
