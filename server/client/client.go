package client

import (
	"net"
	"strings"

	"github.com/valyala/fasthttp"

	"waitingroom/server/access"
	"waitingroom/server/api"
	"waitingroom/server/listener"
)

// Resolver tells what a request says of its client, believing only the
// trusted proxies.
type Resolver struct {
	// TrustedProxies may tell the client's IP in Header, the scheme in
	// X-Forwarded-Proto and the request id; from anyone else those headers
	// (and X-Forwarded-For) are ignored.
	TrustedProxies []*net.IPNet
	Header         string
	// AlwaysHTTPS: every request counts as HTTPS (the operator says so).
	AlwaysHTTPS bool
}

// Addr is the socket's peer, unless that peer is a trusted proxy that
// names the client in Header. X-Forwarded-For from anyone else is never
// read.
func (r Resolver) Addr(ctx *fasthttp.RequestCtx) net.IP {
	peer := ctx.RemoteIP()
	if len(r.TrustedProxies) > 0 && r.Trusted(peer) {
		if ip := net.ParseIP(string(ctx.Request.Header.Peek(r.Header))); ip != nil {
			return ip
		}
	}
	return peer
}

// Key is listener.AddrKey of the client's address (Addr): the subject of
// per-address limits.
func (r Resolver) Key(ctx *fasthttp.RequestCtx) string { return listener.AddrKey(r.Addr(ctx)) }

// IP is the client's address (Addr) as text, as logged.
func (r Resolver) IP(ctx *fasthttp.RequestCtx) string { return r.Addr(ctx).String() }

// Trusted reports whether ip is one of the trusted proxies.
func (r Resolver) Trusted(ip net.IP) bool { return access.InNets(r.TrustedProxies, ip) }

// ViaProxy reports whether the request's peer is a trusted proxy.
func (r Resolver) ViaProxy(ctx *fasthttp.RequestCtx) bool {
	return len(r.TrustedProxies) > 0 && r.Trusted(ctx.RemoteIP())
}

// HTTPS reports whether the request reached us over HTTPS: TLS on this
// socket, X-Forwarded-Proto: https from a trusted proxy (from anyone else
// the header is ignored — Fiber's c.Protocol() believes it from anyone),
// or AlwaysHTTPS.
func (r Resolver) HTTPS(ctx *fasthttp.RequestCtx) bool {
	if r.AlwaysHTTPS || ctx.IsTLS() {
		return true
	}
	return r.Trusted(ctx.RemoteIP()) && strings.EqualFold(strings.TrimSpace(string(ctx.Request.Header.Peek(fasthttp.HeaderXForwardedProto))), "https")
}

// RequestID is the id of ctx's request (api.RequestIDHeader): the one a
// trusted proxy sent when it is fit (api.ValidRequestID), else a fresh
// one. A client's own is never taken (it could pass itself off as another
// request in the log), and an unfit one is replaced, never refused.
func (r Resolver) RequestID(ctx *fasthttp.RequestCtx) string {
	if len(r.TrustedProxies) > 0 {
		if v := ctx.Request.Header.Peek(api.RequestIDHeader); api.ValidRequestID(v) && r.Trusted(ctx.RemoteIP()) {
			return string(v)
		}
	}
	return api.NewRequestID()
}
