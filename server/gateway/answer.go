package gateway

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// The cookies of gateway mode, per room: the entry token of an admitted
// visitor (set by the waiting room's API when it answers READY, spent by
// the first protected request in mode "once"), the visit that request
// opens, and the session of mode "session". All are HttpOnly, SameSite=Lax, Path=/ (the origin's paths
// need them), Secure over HTTPS; the origin never sees them.
func EntryCookie(room string) string   { return "wr_entry_" + room }
func SessionCookie(room string) string { return "wr_session_" + room }

// VisitCookie holds the visit a once pass opened (token.KindVisit): the
// room's protected requests pass with it until the visit ends.
func VisitCookie(room string) string { return "wr_visit_" + room }

// entryToken is the request's entry token for room: X-Entry-Token (API
// clients), else the entry cookie.
func entryToken(ctx *fasthttp.RequestCtx, room string) string {
	if v := ctx.Request.Header.Peek("X-Entry-Token"); len(v) > 0 {
		ctx.Request.Header.Del("X-Entry-Token")
		return string(v)
	}
	return string(ctx.Request.Header.Cookie(EntryCookie(room)))
}

// setCookie adds one of the gateway's cookies to the response, which
// shared caches must then not keep (privateCache).
func setCookie(ctx *fasthttp.RequestCtx, name, value string, ttl time.Duration, secure bool) {
	c := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(c)
	c.SetKey(name)
	c.SetValue(value)
	c.SetPath("/")
	c.SetHTTPOnly(true)
	c.SetSameSite(fasthttp.CookieSameSiteLaxMode)
	c.SetMaxAge(int(ttl.Seconds()))
	c.SetSecure(secure)
	ctx.Response.Header.SetCookie(c)
	privateCache(&ctx.Response.Header)
}

// expireCookie deletes one of the gateway's cookies from the visitor's
// browser. The caller checks that the request had it (before forwarding,
// which drops the gateway's cookies from the request).
func expireCookie(ctx *fasthttp.RequestCtx, name string, secure bool) {
	c := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(c)
	c.SetKey(name)
	c.SetPath("/")
	c.SetHTTPOnly(true)
	c.SetSameSite(fasthttp.CookieSameSiteLaxMode)
	c.SetSecure(secure)
	c.SetExpire(fasthttp.CookieExpireDelete)
	ctx.Response.Header.SetCookie(c)
	privateCache(&ctx.Response.Header)
}

// privateCache keeps a response that carries one of the gateway's cookies
// out of shared caches, which could otherwise hand one visitor's admission
// to everyone: the origin's Cache-Control loses its shared-cache
// directives (public, s-maxage, proxy-revalidate) and gains private unless
// it says private or no-store already; CDN-Cache-Control and
// Surrogate-Control (which targeted caches read before Cache-Control) go.
// The browser's own caching (max-age and the rest) is kept.
func privateCache(h *fasthttp.ResponseHeader) {
	var kept []string
	var drop [][]byte
	private := false
	h.VisitAll(func(k, v []byte) {
		switch {
		case bytes.EqualFold(k, []byte(fasthttp.HeaderCacheControl)):
			for _, d := range strings.Split(string(v), ",") {
				d = strings.TrimSpace(d)
				name, _, _ := strings.Cut(strings.ToLower(d), "=")
				switch strings.TrimSpace(name) {
				case "", "public", "s-maxage", "proxy-revalidate":
					continue
				case "private", "no-store":
					private = true
				}
				kept = append(kept, d)
			}
		case bytes.EqualFold(k, []byte("CDN-Cache-Control")), bytes.EqualFold(k, []byte("Surrogate-Control")):
		default:
			return
		}
		drop = append(drop, append([]byte(nil), k...))
	})
	for _, k := range drop {
		h.DelBytes(k)
	}
	if !private {
		kept = append([]string{"private"}, kept...)
	}
	h.Set(fasthttp.HeaderCacheControl, strings.Join(kept, ", "))
}

// failure is one of the gateway's own answers, in the contract's form.
type failure struct {
	status     int
	code, msg  string
	retryAfter int
}

var (
	errBadGateway     = failure{fasthttp.StatusBadGateway, "bad_gateway", "the site could not answer this request; a once pass is kept for a retry or two: retry shortly", 1}
	errGatewayTimeout = failure{fasthttp.StatusGatewayTimeout, "gateway_timeout", "the site did not answer in time; a once pass is kept for a retry or two: retry shortly", 1}
	errUnavailable    = failure{fasthttp.StatusServiceUnavailable, "unavailable", "the waiting room is briefly unavailable; your place is kept, retry shortly", 1}
)

func writeError(ctx *fasthttp.RequestCtx, f failure) {
	writeJSON(ctx, f.status, f.retryAfter, map[string]string{"error": f.code, "message": f.msg})
}

func writeJSON(ctx *fasthttp.RequestCtx, status, retryAfter int, v any) {
	body, _ := json.Marshal(v)
	ctx.Response.Reset()
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.Response.Header.Set("X-Content-Type-Options", "nosniff")
	if retryAfter > 0 {
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	ctx.SetBody(body)
}

// PageURL is the waiting page of room, returning to back (a path with its
// query on this site) once admitted.
func PageURL(room, back string) string {
	return Prefix + "/rooms/" + room + "?return=" + url.QueryEscape(back)
}

// refuse answers a protected request that holds no pass. A browser's page
// navigation (GET or HEAD accepting text/html) is sent to the waiting page
// with 303 See Other, which brings it back to the same URL once admitted;
// any other request gets 403 pass_required in the contract's JSON with the
// room and the page's URL, so a single-page app can send its user there.
func (g *Gateway) refuse(ctx *fasthttp.RequestCtx, room string) {
	page := PageURL(room, string(ctx.URI().RequestURI()))
	if (ctx.IsGet() || ctx.IsHead()) && acceptsHTML(ctx.Request.Header.Peek("Accept")) {
		// A relative Location: behind a TLS-terminating proxy the gateway
		// may not know the scheme or name the visitor used.
		ctx.Response.Reset()
		ctx.Response.Header.Set("Cache-Control", "no-store")
		ctx.Response.Header.Set("Location", page)
		ctx.SetStatusCode(fasthttp.StatusSeeOther)
		return
	}
	writeJSON(ctx, fasthttp.StatusForbidden, 0, map[string]string{"error": "pass_required",
		"message": "this request needs a pass from the waiting room: join the queue at pageUrl", "room": room, "pageUrl": page})
}

// acceptsHTML reports whether an Accept header asks for a page.
func acceptsHTML(accept []byte) bool {
	return len(accept) > 0 && (bytes.Contains(accept, []byte("text/html")) || bytes.Contains(accept, []byte("application/xhtml+xml")))
}

// gatewayMetrics are the gateway's own series.
type gatewayMetrics struct {
	requests *prometheus.CounterVec
	upstream *prometheus.HistogramVec
	answers  *prometheus.CounterVec
}

// Request kinds, as the metrics label them.
const (
	kindProtected   = "protected"
	kindUnprotected = "unprotected"
)

func newGatewayMetrics(reg prometheus.Registerer) gatewayMetrics {
	m := gatewayMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waitingroom_gateway_requests_total",
			Help: "Requests for the origin, by kind (protected, unprotected; unknown before a route matched) and outcome (forwarded, upgraded, no_pass, rate_limited, timeout, bad_gateway, invalid_path, too_large, bad_request, tunnels_per_address, tunnels_total; in forward auth allowed, untrusted_proxy)."},
			[]string{"kind", "outcome"}),
		upstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "waitingroom_gateway_upstream_seconds",
			Help:    "Time the origin took to answer a forwarded request (failures included), by kind.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}, []string{"kind"}),
		answers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waitingroom_gateway_origin_responses_total",
			Help: "Answers of the origin relayed to visitors (the forwarded requests of waitingroom_gateway_requests_total), by kind and status class (1xx to 5xx, other); the gateway's own 502 and 504 are not among them."},
			[]string{"kind", "class"}),
	}
	// The failures the alert rules watch are there at 0 from the start,
	// so that a first failure is a rise, which rate() sees, not a new
	// series, which it does not.
	for _, kind := range []string{kindProtected, kindUnprotected} {
		for _, outcome := range []string{"timeout", "bad_gateway"} {
			m.requests.WithLabelValues(kind, outcome)
		}
		m.answers.WithLabelValues(kind, "5xx")
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.upstream, m.answers)
	}
	return m
}

// answered counts the origin's answer with status code.
func (m gatewayMetrics) answered(kind string, code int) {
	m.requests.WithLabelValues(kind, "forwarded").Inc()
	m.answers.WithLabelValues(kind, statusClass(code)).Inc()
}

// statusClass is the class of an origin's status code (100 to 999, as
// package origin reads it): "1xx" to "5xx", else "other".
func statusClass(code int) string {
	if code < 100 || code >= 600 {
		return "other"
	}
	return strconv.Itoa(code/100) + "xx"
}
