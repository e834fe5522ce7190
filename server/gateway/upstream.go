package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"waitingroom/server/pass"

	"github.com/valyala/fasthttp"
)

// Upstream is the origin behind the gateway: one fasthttp client with
// bounded connect and answer times and a cap on bodies.
type Upstream struct {
	hc      *fasthttp.HostClient
	timeout time.Duration
	// For protocol switches (tunnel.go): the origin's address, name and
	// scheme, the connect timeout, and the joined connections.
	addr, host string
	tls        bool
	connect    time.Duration
	open       tunnels
}

// responseHeaderLimit bounds the origin's status line and headers: an
// origin sending more is answered 502.
const responseHeaderLimit = 64 << 10

// UpstreamConfig is the origin's address and limits.
type UpstreamConfig struct {
	URL            string        // WR_UPSTREAM: http://host:port or https://host:port, no path
	ConnectTimeout time.Duration // WR_UPSTREAM_CONNECT_TIMEOUT
	Timeout        time.Duration // WR_UPSTREAM_TIMEOUT: the origin's whole answer
	BodyLimit      int           // WR_UPSTREAM_BODY_LIMIT: request bodies (responses are streamed)
}

// ParseUpstream checks WR_UPSTREAM's form and returns its address (host:port,
// the scheme's port when none is given) and whether it speaks TLS.
func ParseUpstream(raw string) (addr string, tls bool, err error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false, errors.New("want http://host:port or https://host:port")
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil || u.Fragment != "" {
		return "", false, errors.New("want the origin's scheme, host and port only (no path, query or credentials)")
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return net.JoinHostPort(host, port), u.Scheme == "https", nil
}

// NewUpstream returns the client of c's origin. It does no I/O.
func NewUpstream(c UpstreamConfig) (*Upstream, error) {
	addr, tls, err := ParseUpstream(c.URL)
	if err != nil {
		return nil, fmt.Errorf("gateway: WR_UPSTREAM: %w", err)
	}
	connect := c.ConnectTimeout
	hc := &fasthttp.HostClient{
		Addr:  addr,
		IsTLS: tls,
		Dial: func(a string) (net.Conn, error) {
			return fasthttp.DialTimeout(a, connect)
		},
		ReadTimeout:                   c.Timeout,
		WriteTimeout:                  c.Timeout,
		ReadBufferSize:                responseHeaderLimit,
		MaxIdleConnDuration:           30 * time.Second,
		MaxIdemponentCallAttempts:     2, // one retry of an idempotent request on a stale connection
		DisableHeaderNamesNormalizing: true,
		NoDefaultUserAgentHeader:      true,
		StreamResponseBody:            true,
	}
	host, _, _ := net.SplitHostPort(addr)
	return &Upstream{hc: hc, timeout: c.Timeout, addr: addr, host: host, tls: tls, connect: connect}, nil
}

// Close closes the idle connections to the origin and every joined
// (WebSocket) connection (at shutdown).
func (u *Upstream) Close() {
	u.hc.CloseIdleConnections()
	u.open.closeAll()
}

// Failure kinds of a forward: the origin did not answer in time, or could
// not be reached or answered something unusable.
var (
	ErrTimeout    = errors.New("the origin did not answer in time")
	ErrBadGateway = errors.New("the origin could not be reached or answered badly")
)

// Forward sends ctx's request, prepared by prepareRequest, to the origin and
// puts its answer in ctx's response. An error is ErrTimeout or
// ErrBadGateway (wrapping the cause); ctx's response is then not set.
func (u *Upstream) Forward(ctx *fasthttp.RequestCtx) error {
	err := u.hc.DoTimeout(&ctx.Request, &ctx.Response, u.timeout)
	if err == nil {
		cleanResponse(&ctx.Response.Header)
		return nil
	}
	ctx.Response.Reset()
	var ne net.Error
	switch {
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, fasthttp.ErrDialTimeout),
		errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	return fmt.Errorf("%w: %w", ErrBadGateway, err)
}

// hopHeaders are the hop-by-hop headers (RFC 9110 §7.6.1), never forwarded.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
	"Proxy-Authorization", "TE", "Trailer", "Transfer-Encoding", "Upgrade"}

// Forwarded says who asked, as the gateway saw it.
type Forwarded struct {
	Client net.IP // the client's address (a trusted proxy's client, when one is in front)
	// Chain is X-Forwarded-For as a trusted proxy sent it ("" from anyone
	// else: a client's own claim is dropped).
	Chain string
	Peer  net.IP // the socket's peer
	Proto string // "http" or "https"
	Host  string // the Host the client asked for
}

// prepareRequest makes ctx's request fit for the origin: hop-by-hop headers
// and the gateway's own cookies and pass header removed, the forwarding
// headers set (X-Forwarded-For, -Proto, -Host and Forwarded). The Host
// header is kept: the origin sees the name its visitors use.
func prepareRequest(req *fasthttp.Request, f Forwarded, ownCookie func(name []byte) bool) {
	h := &req.Header
	for _, name := range connectionTokens(h.Peek("Connection")) {
		h.Del(name)
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
	h.Del(pass.HeaderName)
	dropCookies(h, ownCookie)
	xff := f.Peer.String()
	if f.Chain != "" {
		xff = f.Chain + ", " + xff
	}
	h.Set("X-Forwarded-For", xff)
	h.Set("X-Forwarded-Proto", f.Proto)
	h.Set("X-Forwarded-Host", f.Host)
	h.Set("Forwarded", forwardedValue(f))
}

// forwardedValue is RFC 7239's Forwarded for the client.
func forwardedValue(f Forwarded) string {
	node := f.Client.String()
	if f.Client.To4() == nil {
		node = `"[` + node + `]"`
	}
	host := f.Host
	if strings.ContainsAny(host, `";, `) || host == "" {
		host = `"` + strings.NewReplacer(`"`, "", `\`, "").Replace(host) + `"`
	}
	return "for=" + node + ";proto=" + f.Proto + ";host=" + host
}

// connectionTokens are the header names a Connection header lists.
func connectionTokens(v []byte) []string {
	var out []string
	for _, t := range bytes.Split(v, []byte{','}) {
		if t = bytes.TrimSpace(t); len(t) > 0 && !bytes.EqualFold(t, []byte("close")) && !bytes.EqualFold(t, []byte("keep-alive")) {
			out = append(out, string(t))
		}
	}
	return out
}

// dropCookies removes the cookies own says are the gateway's: the origin
// never sees a visitor's queue or pass tokens.
func dropCookies(h *fasthttp.RequestHeader, own func(name []byte) bool) {
	var names []string
	h.VisitAllCookie(func(k, _ []byte) {
		if own(k) {
			names = append(names, string(k))
		}
	})
	for _, n := range names {
		h.DelCookie(n)
	}
}

// cleanResponse removes the hop-by-hop headers of the origin's answer; the
// client connection's own framing is the gateway's.
func cleanResponse(h *fasthttp.ResponseHeader) {
	for _, name := range connectionTokens(h.Peek("Connection")) {
		h.Del(name)
	}
	h.ResetConnectionClose()
	for _, name := range hopHeaders {
		if name != "Transfer-Encoding" { // fasthttp frames the body itself
			h.Del(name)
		}
	}
}
