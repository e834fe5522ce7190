package server

import (
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"waitingroom/server/api"
	"waitingroom/server/gateway"
	"waitingroom/server/protocol"
)

// guardProtocol puts the protocol filter (package protocol) in front of
// app's fasthttp handler: installed on the fasthttp.Server right after
// fiber.New (Fiber sets Server.Handler only in New, never at Listener or
// Serve time), it runs on every request fasthttp has parsed, before any
// Fiber middleware or handler. It gives the request its id, refuses what
// protocol.Check refuses, and once the request is answered, whatever
// answered it, writes its access line.
func (s *Server) guardProtocol(app *fiber.App) { s.guard(app, false) }

// guardPublic is guardProtocol for the public app: in gateway mode it
// also hands every request outside gateway.Prefix to the gateway, and
// holds the waiting room's own requests to WR_BODY_LIMIT.
func (s *Server) guardPublic(app *fiber.App) { s.guard(app, s.gw != nil) }

func (s *Server) guard(app *fiber.App, gatewayMode bool) {
	srv := app.Server()
	srv.SecureErrorLogMessage = true
	next := srv.Handler
	srv.Handler = func(ctx *fasthttp.RequestCtx) {
		id := s.clients.RequestID(ctx)
		api.SetRequestID(ctx, id)
		// Last: whatever answered (a refusal below resets the response).
		defer ctx.Response.Header.Set(api.RequestIDHeader, id)
		defer protocol.CloseIfUnread(ctx)
		toOrigin := gatewayMode && !ownPath(ctx.Path())
		// Forward auth's question carries the original request's headers
		// (a Content-Encoding among them): checked as the origin's are.
		auth := gatewayMode && s.gw.ForwardAuth() && gateway.IsAuthPath(ctx.Path())
		defer s.logAccess(ctx, srv, toOrigin || auth, time.Now())
		if r := protocol.Check(&ctx.Request.Header, toOrigin || auth); r != nil {
			s.m.ProtocolRefused.WithLabelValues(r.Reason()).Inc()
			r.Write(ctx)
			return
		}
		switch {
		case auth:
			s.authorize(ctx)
		case toOrigin && s.gw.ForwardAuth():
			notForwarded.Write(ctx)
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
}

// notForwarded answers a path outside gateway.Prefix in forward auth,
// where the site's own proxy routes the origin's paths.
var notForwarded = protocol.NotFound("forward auth (WR_FORWARD_AUTH=on): this port serves " + gateway.Prefix + "/ only; the site's proxy routes the rest and asks " + gateway.AuthPath)

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
