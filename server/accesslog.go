package server

import (
	"context"
	"time"

	"github.com/valyala/fasthttp"

	"waitingroom/server/accesslog"
	"waitingroom/server/api"
	"waitingroom/server/gateway"
)

// The access log (package accesslog) at the HTTP layer: the protocol
// filter (guard), which sees every request of both ports whatever answered
// it, hands each to logAccess when it is done, which writes it to its
// port's log (Deps.AccessPublic, Deps.AccessAdmin).

// originRoute is the route of a gateway-mode request for the origin that
// no protected route covers.
const originRoute = "origin"

// quietAdmin are the management port's routes whose successes are never
// logged, whatever the access log's mode says: a scraper's and the probes'.
var quietAdmin = map[string]bool{"/metrics": true, "/healthz": true, "/readyz": true}

// logAccess writes ctx's access line, if its port's log wants it. srv is
// the port's server; toOrigin says the gateway answered (gateway mode).
// For a response its log does not want it costs a comparison or two.
func (s *Server) logAccess(ctx *fasthttp.RequestCtx, srv *fasthttp.Server, toOrigin bool, start time.Time) {
	l := s.accessPublic
	if s.admin != nil && srv == s.admin.Server() {
		l = s.accessAdmin
	}
	status := ctx.Response.StatusCode()
	if !l.Wants(status) {
		return
	}
	route := api.Route(ctx)
	if l == s.accessAdmin && status < 400 && quietAdmin[route] {
		return // scrapes and probes, every few seconds: never a line
	}
	var judged *accesslog.Judged
	switch {
	case route != "":
	case toOrigin:
		route = originRoute
		if method, pattern, room, decision, ok := gateway.Judgement(ctx); ok {
			// Forward auth's question, about another request.
			route = gateway.AuthPath
			judged = &accesslog.Judged{Method: method, Route: pattern, Room: room, Decision: decision}
			break
		}
		sent, raw := gateway.RequestPaths(ctx)
		if r, ok, _ := s.gwSettings.Routes().Find(string(ctx.Method()), sent, raw); ok {
			route = r.Pattern
		}
	default:
		route = api.Unmatched // refused before any route (the protocol filter)
	}
	bytes := -1 // a streamed body of unknown length (Body would read the stream)
	if !ctx.Response.IsBodyStream() {
		bytes = len(ctx.Response.Body())
	} else if n := ctx.Response.Header.ContentLength(); n >= 0 {
		bytes = n
	}
	l.Write(context.Background(), accesslog.Entry{
		Method:    string(ctx.Method()),
		Route:     route,
		Status:    status,
		Bytes:     bytes,
		Duration:  time.Since(start),
		RequestID: api.RequestID(ctx),
		Address:   s.clients.Addr(ctx).String(),
		User:      api.User(ctx),
		Judged:    judged,
	})
}
