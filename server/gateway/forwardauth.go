package gateway

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"waitingroom/server/gateway/origin"
	"waitingroom/server/pass"
)

// Forward auth (New without an Upstream): the site keeps its own reverse
// proxy (nginx, Caddy, Traefik, Envoy), which asks AuthPath about each
// request before it forwards it, and the gateway forwards nothing. The
// question is the original request, told in headers by one of the server's
// trusted proxies (only those are believed: anyone else is refused), in one
// of two conventions:
//
//   - X-Forwarded-Method and X-Forwarded-Uri (Caddy's forward_auth,
//     Traefik's ForwardAuth, Envoy's ext_authz with those headers set): the
//     answer is meant for the visitor as it is. 200 lets the request
//     through; 303 sends a page navigation to the waiting page; 403
//     pass_required, 429, 503 and 400 are the contract's JSON.
//   - X-Original-Method and X-Original-URI (nginx's auth_request, which
//     takes 2xx, 401 and 403 only): 200 lets it through; a navigation to
//     the waiting page is 401 with the Location for the proxy to send as a
//     303; any other refusal is 403 carrying the real status in
//     Waitingroom-Status and the JSON body in Waitingroom-Answer, for the
//     proxy to answer (deploy/forward-auth/nginx.conf.template).
//
// A request naming both conventions is 400: a proxy that sets one and
// passes a client's other would otherwise be judged on what the client
// wrote. The original request is judged exactly as the gateway judges the
// requests it forwards: the same routes, canonical matching, passes and
// visits (once() and session()), with one difference each:
//
//   - The origin's answer is never seen. A once pass is spent when the
//     answer is given, and cannot be restored if the origin then fails;
//     the visit it opens is what lets the visitor retry.
//   - A 200 carries the pass in Waitingroom-Pass, for the proxy to hand to
//     the origin, and at most one Set-Cookie (the visit's or the
//     session's), for the proxy to hand to the visitor: nginx's
//     auth_request_set reads only the first.
//   - Requests in flight are not counted (the end of a request is not
//     seen), and adaptive admission learns no latency from the origin.
//   - A request naming a method override (X-HTTP-Method-Override and the
//     like, which the shipped configurations remove before the origin) is
//     judged by every route of its path, as a form POST is.

// AuthPath is forward auth's decision endpoint.
const AuthPath = Prefix + "/auth"

// Authorize answers one request of AuthPath; trusted: its peer is one of
// the server's trusted proxies; denied: its client (as the proxy tells it)
// is on the deny list.
func (g *Gateway) Authorize(ctx *fasthttp.RequestCtx, trusted, denied bool) {
	if !trusted {
		ctx.SetUserValue(judgedKey{}, &judged{decision: "refused"})
		g.m.requests.WithLabelValues("unknown", "untrusted_proxy").Inc()
		writeJSON(ctx, fasthttp.StatusForbidden, 0, map[string]string{"error": "untrusted_proxy",
			"message": "this endpoint answers the proxies of " + g.o.TrustedProxiesName + " only; add this proxy's address there"})
		return
	}
	h := &ctx.Request.Header
	fm, fu := h.Peek("X-Forwarded-Method"), h.Peek("X-Forwarded-Uri")
	om, ou := h.Peek("X-Original-Method"), h.Peek("X-Original-URI")
	nginx, relay := len(om) > 0 || len(ou) > 0, len(fm) > 0 || len(fu) > 0
	var method, uri []byte
	switch {
	case nginx && relay:
		g.authRefused(ctx, nginx, "both X-Original-* and X-Forwarded-Method/-Uri are set: the proxy must send one convention and clear the other's headers")
		return
	case nginx:
		method, uri = om, ou
	case relay:
		method, uri = fm, fu
	default:
		g.authRefused(ctx, false, "no original request: the proxy must send X-Forwarded-Method and X-Forwarded-Uri, or X-Original-Method and X-Original-URI")
		return
	}
	if !validMethod(method) {
		g.authRefused(ctx, nginx, "the original method is missing or not an upper-case token")
		return
	}
	if !validTarget(uri) {
		g.authRefused(ctx, nginx, "the original URI is missing or not a path with its query (origin form: a single / first, no fragment, no spaces)")
		return
	}
	if denied {
		ctx.SetUserValue(judgedKey{}, &judged{method: string(method), decision: "refused"})
		writeJSON(ctx, fasthttp.StatusForbidden, 0, map[string]string{"error": "denied", "message": "access denied"})
		if nginx {
			forNginx(ctx)
		}
		return
	}
	// The body never reaches /_wr/auth (nor does its length, reliably):
	// every POST is judged by every route of its path, as a POST with a
	// body is in gateway mode (routedMethod).
	override := overridden(h) || string(method) == fasthttp.MethodPost
	// The origin gets the target as the client sent it: that is what is
	// judged (raw, as both of Match's paths), not fasthttp's parse of it.
	path := uri
	if i := bytes.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	// The question's own method is put back once judged: fasthttp leaves
	// the body out of the answer to a HEAD, and a proxy that asked with GET
	// would wait for it.
	asked := append([]byte(nil), h.Method()...)
	h.SetMethodBytes(method)
	ctx.Request.SetRequestURIBytes(uri)
	g.judge(ctx, override, string(path), string(path))
	h.SetMethodBytes(asked)
	if j, ok := ctx.UserValue(judgedKey{}).(*judged); ok {
		j.decision = decision(&ctx.Response)
	}
	if nginx {
		forNginx(ctx)
	}
}

// decision names forward auth's answer, for the access line: pass (200
// with a pass), unprotected (200 without), wait (303 to the waiting page,
// or 403 pass_required), refused (anything else).
func decision(r *fasthttp.Response) string {
	switch code := r.StatusCode(); {
	case code == fasthttp.StatusOK && len(r.Header.Peek(pass.HeaderName)) > 0:
		return "pass"
	case code == fasthttp.StatusOK:
		return "unprotected"
	case code == fasthttp.StatusSeeOther,
		code == fasthttp.StatusForbidden && bytes.Contains(r.Body(), []byte(`"error":"pass_required"`)):
		return "wait"
	}
	return "refused"
}

// IsAuthPath reports whether path asks AuthPath: the path itself, or a
// path below it (a proxy that appends the request's path to the
// endpoint's, as some ext_authz versions do; the original request is read
// from the headers all the same).
func IsAuthPath(path []byte) bool {
	return bytes.HasPrefix(path, []byte(AuthPath)) && (len(path) == len(AuthPath) || path[len(AuthPath)] == '/')
}

// authRefused answers a question AuthPath cannot judge: 400.
func (g *Gateway) authRefused(ctx *fasthttp.RequestCtx, nginx bool, msg string) {
	ctx.SetUserValue(judgedKey{}, &judged{decision: "refused"})
	g.m.requests.WithLabelValues("unknown", "bad_request").Inc()
	writeError(ctx, failure{status: fasthttp.StatusBadRequest, code: "invalid_request", msg: msg})
	if nginx {
		forNginx(ctx)
	}
}

// authorize is forward auth's decision to let a request of kind through:
// the site's proxy forwards it, with pass p when it is protected ("" when
// not).
func (g *Gateway) authorize(ctx *fasthttp.RequestCtx, kind, p string) {
	allow(ctx, p)
	g.m.requests.WithLabelValues(kind, "allowed").Inc()
}

// allow is forward auth's yes: 200, with the pass for the origin when the
// request is protected.
func allow(ctx *fasthttp.RequestCtx, p string) {
	ctx.Response.Reset()
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.Response.Header.Set("Cache-Control", "no-store")
	if p != "" {
		ctx.Response.Header.Set(pass.HeaderName, p)
	}
}

// forNginx turns an answer into the statuses auth_request takes: a 303 to
// the waiting page becomes 401 (Location kept), any other refusal 403
// with the real status and body in Waitingroom-Status and
// Waitingroom-Answer (ASCII, one line).
func forNginx(ctx *fasthttp.RequestCtx) {
	code := ctx.Response.StatusCode()
	switch {
	case code < 300:
	case code == fasthttp.StatusSeeOther:
		ctx.SetStatusCode(fasthttp.StatusUnauthorized)
	default:
		ctx.Response.Header.Set("Waitingroom-Status", strconv.Itoa(code))
		ctx.Response.Header.SetBytesV("Waitingroom-Answer", asciiJSON(ctx.Response.Body()))
		ctx.SetStatusCode(fasthttp.StatusForbidden)
	}
}

// asciiJSON is JSON text with every byte outside printable ASCII escaped
// (\uXXXX): fit for a header value. json.Marshal already escapes control
// characters; this escapes the rest.
func asciiJSON(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		switch {
		case r < 0x80 && r >= 0x20 && r != 0x7f:
			out = append(out, byte(r))
		case r == utf8.RuneError && n == 1:
			out = append(out, `\ufffd`...)
		default:
			for _, u := range utf16Units(r) {
				out = append(out, `\u`...)
				out = append(out, "0123456789abcdef"[u>>12], "0123456789abcdef"[u>>8&15], "0123456789abcdef"[u>>4&15], "0123456789abcdef"[u&15])
			}
		}
		b = b[n:]
	}
	return out
}

func utf16Units(r rune) []uint16 {
	if r < 0x10000 {
		return []uint16{uint16(r)}
	}
	r -= 0x10000
	return []uint16{uint16(0xd800 + r>>10), uint16(0xdc00 + r&0x3ff)}
}

// validMethod: an upper-case token, as the public port takes methods.
func validMethod(m []byte) bool {
	if len(m) == 0 || len(m) > 32 {
		return false
	}
	for _, c := range m {
		if !origin.IsTokenChar(c) || (c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// validTarget: a request target in origin form (a path and its query),
// without spaces, control characters or "#" (no request target holds a
// fragment; an origin that took one for a fragment would route on less
// of the path than was judged). "//" first is refused too: an origin may
// read it as a host ("//host/path", a network-path reference).
func validTarget(u []byte) bool {
	if len(u) == 0 || u[0] != '/' || len(u) > 8<<10 || bytes.HasPrefix(u, []byte("//")) {
		return false
	}
	for _, c := range u {
		if c <= ' ' || c >= 0x7f || c == '#' {
			return false
		}
	}
	return true
}

// overridden reports whether a request names one of the rerouting
// headers (origin.Reroutes: Expect aside), in either spelling: they ask an
// origin's framework for another method or path than the request line's.
// The gateway removes them before the origin (origin's Prepare); in
// forward auth the proxy is to, and a request naming one is judged by
// every route of its path.
func overridden(h *fasthttp.RequestHeader) bool {
	found := false
	h.VisitAll(func(k, _ []byte) {
		if origin.Reroutes(k) {
			found = true
		}
	})
	return found
}
