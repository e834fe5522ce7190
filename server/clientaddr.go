package server

import (
	"net"

	"github.com/valyala/fasthttp"

	"github.com/gofiber/fiber/v2"

	"waitingroom/server/access"
	"waitingroom/server/api"
	"waitingroom/server/listener"
)

// clientKey is listener.AddrKey of the request's client address (clientIP): the
// subject of per-address rate limits.
func (s *Server) clientKey(c *fiber.Ctx) string { return listener.AddrKey(s.clientAddr(c)) }

// clientIP is the request's client address (clientAddr) as text.
func (s *Server) clientIP(c *fiber.Ctx) string { return s.clientAddr(c).String() }

// clientAddr is the socket's peer, unless that peer is a trusted proxy
// (WR_TRUSTED_PROXIES) that names the client in WR_CLIENT_IP_HEADER.
// X-Forwarded-For from anyone else is never read.
func (s *Server) clientAddr(c *fiber.Ctx) net.IP { return s.clientAddrOf(c.Context()) }

// clientAddrOf is clientAddr below Fiber (the gateway's requests).
func (s *Server) clientAddrOf(ctx *fasthttp.RequestCtx) net.IP {
	peer := ctx.RemoteIP()
	if len(s.cfg.TrustedProxies) > 0 && s.trusted(peer) {
		if ip := net.ParseIP(string(ctx.Request.Header.Peek(s.cfg.ClientIPHeader))); ip != nil {
			return ip
		}
	}
	return peer
}

// trusted reports whether ip is one of WR_TRUSTED_PROXIES.
func (s *Server) trusted(ip net.IP) bool { return access.InNets(s.cfg.TrustedProxies, ip) }

// requestID is the id of ctx's request (api.RequestIDHeader): the one a
// trusted proxy (WR_TRUSTED_PROXIES) sent when it is fit
// (api.ValidRequestID), else a fresh one. A client's own is never taken (it
// could pass itself off as another request in the log), and an unfit one
// is replaced, never refused.
func (s *Server) requestID(ctx *fasthttp.RequestCtx) string {
	if len(s.cfg.TrustedProxies) > 0 {
		if v := ctx.Request.Header.Peek(api.RequestIDHeader); api.ValidRequestID(v) && s.trusted(ctx.RemoteIP()) {
			return string(v)
		}
	}
	return api.NewRequestID()
}
