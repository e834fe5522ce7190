package server

import (
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"waitingroom/server/api"
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

// guardPublic is guardProtocol for the public app: in gateway mode the
// requests it lets in are dispatched by mode (gatewaymode.go's dispatch).
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
		toOrigin, auth := s.gatewayPaths(ctx, gatewayMode)
		defer s.logAccess(ctx, srv, toOrigin || auth, time.Now())
		if r := protocol.Check(&ctx.Request.Header, toOrigin || auth); r != nil {
			s.m.ProtocolRefused.WithLabelValues(r.Reason()).Inc()
			r.Write(ctx)
			return
		}
		s.dispatch(ctx, next, toOrigin, auth)
	}
}
