package gateway

import (
	"net/url"
	"strings"
	"testing"

	"waitingroom/cmd/waitingroom/systemtest"
)

// proxyPathVariants spell protected routes in ways a proxy and an origin
// may read differently: percent-encoding, dot segments (plain, encoded,
// through /_wr/), repeated slashes, case, ;params, a backslash, the
// absolute form, and paths origins read differently (which the waiting
// room refuses, and nginx may refuse first). HOST is the proxy's address.
var proxyPathVariants = []routeVariant{
	{method: "GET", target: "/%63heckout/x"},
	{method: "GET", target: "/public/../checkout/x"},
	{method: "GET", target: "/public/%2e%2e/checkout/x"},
	{method: "GET", target: "/checkout/%2e%2e/checkout/x"},
	{method: "GET", target: "/public/..%2Fcheckout/x"},
	{method: "GET", target: "/checkout/./x"},
	{method: "GET", target: "//checkout/x"},
	{method: "GET", target: "/checkout//x"},
	{method: "GET", target: "/CHECKOUT/x"},
	{method: "GET", target: "/Checkout/X/"},
	{method: "GET", target: "/checkout%2Fx"},
	{method: "GET", target: "/_wr/../checkout/x"},
	{method: "GET", target: "/_wr/%2e%2e/checkout/x"},
	{method: "GET", target: "/checkout;a=b/x"},
	{method: "GET", target: `/checkout\x`},
	{method: "GET", target: "/checkout/x?to=/public"},
	{method: "GET", target: "http://HOST/checkout/x"},
	{method: "GET", target: "/checkout/x%00"},
	{method: "GET", target: "/checkout/x%zz"},
	{method: "GET", target: "/checkout/%C0%AFx"},
	{method: "POST", target: "/API/Orders"},
	{method: "POST", target: "/api/orders/"},
	{method: "POST", target: "/api//orders"},
	{method: "POST", target: "/api/./orders"},
	{method: "POST", target: "/api/x/../orders"},
	{method: "POST", target: "/api/orders.json"},
	{method: "POST", target: "/api/orders;x=1"},
	{method: "POST", target: "/api/%6Frders"},
	// One more round of decoding, raw dot segments, a fragment: each once
	// passed the proxies unjudged to an origin that routed it protected.
	{method: "GET", target: "/checkout/%252e%252e"},
	{method: "GET", target: "/checkout/x%252f..%252f..%252fpublic"},
	{method: "POST", target: "/api/orders/%252e%252e"},
	{method: "GET", target: "/checkout/.."},
	{method: "GET", target: "/checkout/../"},
	{method: "GET", target: "/checkout%2f.."},
	{method: "GET", target: "/checkout/%2e%2e"},
	{method: "GET", target: "/x#/../checkout/x"},
	{method: "GET", target: "/checkout/%25252e%25252e"},
	{method: "GET", target: "/checkout/..;x"},
	{method: "GET", target: "/checkout/.%2e/"},
}

// TestProxiesMethodOverride: through each proxy, a POST to a GET-protected
// path that an origin routes as GET (overrideProbes) is refused, and no
// protected handler is reached without a pass: /_wr/auth never sees the
// body, so it judges every POST by every route of its path.
func TestProxiesMethodOverride(t *testing.T) {
	in := systemtest.NewRedisOnlyEnv(t).Start(forwardAuthVars())
	lenient := startLenientOrigin(t)
	eachProxy(t, in, lenient.srv.URL, lenient.log, func(t *testing.T, s *proxiedSite) {
		for _, r := range overrideProbes {
			if code, body := rawSend(t, s.base, "POST", r.target, r.body, r.headers...); code != 403 {
				t.Errorf("%s: POST %s %q: %d %s, want 403", s.proxy, r.target, r.headers, code, strings.TrimSpace(body))
			}
		}
		noProtectedWithoutPass(t, s.proxy, s.log())
	})
}

// TestProxiesPathsAgree: what a proxy routes and what /_wr/auth judges
// cannot disagree. Through each proxy, in front of the Express origin and
// of the origin that routes with every mainstream framework's leniency
// (lenientOrigin), no variant of a protected route reaches a protected
// handler without a pass: each is refused (403, or 400 by the waiting
// room or by nginx itself, or 404 by the waiting room when the proxy
// routed it there), and the origin's log is the judge. Near misses still
// reach the origin, and an admitted visitor does get through on a variant
// the origin routes to its protected handler, with a pass.
func TestProxiesPathsAgree(t *testing.T) {
	expressBase, expressHits := startExpress(t)
	in := systemtest.NewRedisOnlyEnv(t).Start(forwardAuthVars())
	lenient := startLenientOrigin(t)
	for _, o := range []struct {
		name, base string
		hits       func() []hit
		admitted   string // a variant the origin routes to its checkout handler
	}{
		{"express", expressBase, expressHits, "/CHECKOUT/x"},
		{"lenient", lenient.srv.URL, lenient.log, "/Checkout;a=b/x"},
	} {
		t.Run(o.name, func(t *testing.T) {
			eachProxy(t, in, o.base, o.hits, func(t *testing.T, s *proxiedSite) {
				host := strings.TrimPrefix(s.base, "http://")
				for _, v := range proxyPathVariants {
					target := strings.Replace(v.target, "HOST", host, 1)
					code, body := rawCall(t, s.base, v.method, target)
					if code != 400 && code != 403 && code != 404 {
						t.Errorf("%s: %s %s: %d %s, want a refusal", s.proxy, v.method, target, code, strings.TrimSpace(body))
					}
				}
				noProtectedWithoutPass(t, s.proxy, s.log())
				for _, target := range []string{"/public", "/checkoutx", "/api/orders-list"} {
					before := len(s.log())
					if code, body := rawCall(t, s.base, "GET", target); code != 200 && code != 404 {
						t.Errorf("%s: GET %s: %d %s, want the origin's answer", s.proxy, target, code, body)
					}
					if hs := s.log(); len(hs) != before+1 || hs[before].Pass {
						t.Errorf("%s: GET %s reached the origin as %+v, want once without a pass", s.proxy, target, hs[before:])
					}
				}

				c := s.visitor()
				s.admit(c)
				if res, _ := s.send(c, "GET", "/checkout/x", ""); res.StatusCode != 200 { // spends the entry, opens the visit
					t.Fatalf("%s: GET /checkout/x admitted: %d", s.proxy, res.StatusCode)
				}
				u, _ := url.Parse(s.base)
				var cookies []string
				for _, k := range c.Jar.Cookies(u) {
					cookies = append(cookies, k.Name+"="+k.Value)
				}
				code, body := rawCall(t, s.base, "GET", o.admitted, "Cookie", strings.Join(cookies, "; "))
				if h := s.lastHit(); code != 200 || h.Handler != "checkout" || !h.Pass {
					t.Errorf("%s: GET %s in a visit: %d %s, origin got %+v; want the checkout handler with a pass",
						s.proxy, o.admitted, code, strings.TrimSpace(body), h)
				}
				noProtectedWithoutPass(t, s.proxy, s.log())
			})
		})
	}
}
