package gateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/gateway"
	"waitingroom/server/pass"
	"waitingroom/stream/sseclient"
)

// TestProxiesQueueThenPass: through each shipped proxy, an unprotected
// page reaches the origin at once with no pass; a protected page sends a
// navigation to the waiting page (303) and refuses a call with the
// contract's 403 pass_required JSON, the origin untouched. Once admitted
// (the waiting page's API, through the proxy), the page and everything it
// loads under the protected prefix (stylesheet, image, a call, the order)
// reach the origin, each with a pass that verifies against the waiting
// room's keys and carries the one visit's pass id, and the visit cookie
// reaches the visitor.
func TestProxiesQueueThenPass(t *testing.T) {
	forwardAuthSites(t, func(t *testing.T, s *proxiedSite) {
		c := s.visitor()
		res, body := s.send(c, "GET", "/public?q=1", "", "Accept", "text/html")
		if res.StatusCode != 200 || !strings.Contains(body, "<p>public</p>") {
			t.Fatalf("%s: GET /public: %d %q, want the origin's page", s.proxy, res.StatusCode, body)
		}
		if h := s.lastHit(); h.Handler != "public" || h.Pass || h.URL != "/public?q=1" {
			t.Errorf("%s: the origin got %+v, want /public?q=1 without a pass", s.proxy, h)
		}
		if got := ownCookies(res); len(got) != 0 {
			t.Errorf("%s: an unprotected answer set %v", s.proxy, got)
		}

		// Without a pass: the navigation goes to the waiting page, which
		// the proxy serves; a call and an order get the JSON refusal.
		res, _ = s.send(c, "GET", "/checkout/page?step=1", "", "Accept", "text/html,application/xhtml+xml")
		loc := res.Header.Get("Location")
		if res.StatusCode != 303 || returnOf(t, loc) != "/checkout/page?step=1" {
			t.Fatalf("%s: a navigation without a pass: %d Location %q, want 303 to the waiting page", s.proxy, res.StatusCode, loc)
		}
		if res, body := s.send(c, "GET", loc, "", "Accept", "text/html"); res.StatusCode != 200 ||
			!strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, "<html") {
			t.Fatalf("%s: the waiting page %s: %d %s", s.proxy, loc, res.StatusCode, res.Header.Get("Content-Type"))
		}
		for _, r := range []struct{ method, path, body, pageURL string }{
			{"GET", "/checkout/api/cart", "", "/_wr/rooms/sale?return=%2Fcheckout%2Fapi%2Fcart"},
			{"POST", "/api/orders", `{"productId":1}`, "/_wr/rooms/sale?return=%2Fapi%2Forders"},
		} {
			res, body := s.send(c, r.method, r.path, r.body, "Accept", "application/json", "Content-Type", "application/json")
			var m map[string]any
			if err := json.Unmarshal([]byte(body), &m); err != nil || res.StatusCode != 403 || m["error"] != "pass_required" ||
				m["room"] != "sale" || m["pageUrl"] != r.pageURL || res.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%s: %s %s without a pass: %d %s %q, want 403 pass_required JSON with pageUrl %s",
					s.proxy, r.method, r.path, res.StatusCode, res.Header.Get("Content-Type"), body, r.pageURL)
			}
		}
		if hs := s.log(); len(hs) != 1 {
			t.Fatalf("%s: the origin got %+v, want /public alone", s.proxy, hs)
		}

		// Admitted: the page spends the entry token and opens the visit.
		s.admit(c)
		res, body = s.send(c, "GET", "/checkout/page?step=1", "", "Accept", "text/html")
		if res.StatusCode != 200 || !strings.Contains(body, "<p>checkout</p>") {
			t.Fatalf("%s: the page once admitted: %d %q", s.proxy, res.StatusCode, body)
		}
		first := s.verify(s.lastHit())
		if first.Room != "sale" || first.Mode != pass.ModeOnce || first.PassID == "" {
			t.Errorf("%s: the first pass: %+v, want a once pass of room sale", s.proxy, first)
		}
		if got := ownCookies(res); len(got) != 1 || !strings.HasPrefix(got[0], gateway.VisitCookie("sale")+"=") {
			t.Errorf("%s: the admitted page set %v, want the visit cookie alone", s.proxy, got)
		}
		if cookieOf(c, s.base, gateway.VisitCookie("sale")) == "" {
			t.Fatalf("%s: the visitor holds no visit cookie", s.proxy)
		}
		for _, r := range []struct {
			method, path, accept, body string
			status                     int
			handler, contentType       string
		}{
			{"GET", "/checkout/style.css", "text/css,*/*;q=0.1", "", 200, "style", "text/css"},
			{"GET", "/checkout/logo.svg", "image/avif,image/webp,*/*", "", 200, "logo", "image/svg+xml"},
			{"GET", "/checkout/api/cart", "application/json", "", 200, "cart", "application/json"},
			{"POST", "/api/orders", "application/json", orderBody, 201, "orders", "application/json"},
		} {
			res, body := s.send(c, r.method, r.path, r.body, "Accept", r.accept, "Content-Type", "application/json")
			if res.StatusCode != r.status || !strings.HasPrefix(res.Header.Get("Content-Type"), r.contentType) {
				t.Errorf("%s: %s %s in the visit: %d %s, want %d %s", s.proxy, r.method, r.path, res.StatusCode,
					res.Header.Get("Content-Type"), r.status, r.contentType)
				continue
			}
			h := s.lastHit()
			if h.Handler != r.handler {
				t.Errorf("%s: %s %s reached %q, want %q", s.proxy, r.method, r.path, h.Handler, r.handler)
			}
			if p := s.verify(h); p.PassID != first.PassID || p.Subject != first.Subject || p.Room != "sale" {
				t.Errorf("%s: %s %s carried pass %+v, want the visit's (id %s)", s.proxy, r.method, r.path, p, first.PassID)
			}
			// The question to /_wr/auth carried no body: the origin got it whole.
			if r.handler == "orders" && !strings.Contains(body, fmt.Sprintf(`"bytes":%d`, len(orderBody))) {
				t.Errorf("%s: the order got %s, want its %d bytes", s.proxy, body, len(orderBody))
			}
		}
		noProtectedWithoutPass(t, s.proxy, s.log())
	})
}

// orderBody is an order larger than the waiting room reads of a request
// (WR_BODY_LIMIT, 16 KiB): it must reach the origin, not /_wr/auth.
var orderBody = `{"productId":1,"note":"` + strings.Repeat("x", 64<<10) + `"}`

// ownCookies are the waiting room's cookies (wr_*) an answer sets.
func ownCookies(res *http.Response) []string {
	var out []string
	for _, v := range res.Header.Values("Set-Cookie") {
		if strings.HasPrefix(v, "wr_") || strings.HasPrefix(v, "__Host-wr_") {
			out = append(out, v)
		}
	}
	return out
}

// TestProxiesStreamsAndWebSocket: through each proxy the waiting room's
// streams work, unbuffered (the SSE stream's first event arrives while
// the stream stays open; the WebSocket's first message too), and a
// WebSocket to the origin opens on an unprotected path at once and on a
// protected one with a pass only.
func TestProxiesStreamsAndWebSocket(t *testing.T) {
	// Long: a stopping Caddy waits its grace period (5 s) for the stream
	// it keeps open to the waiting room.
	systemtest.LongScenario(t)
	forwardAuthSites(t, func(t *testing.T, s *proxiedSite) {
		c := s.visitor()
		if res, body := s.send(c, "POST", "/_wr/api/v1/rooms/sale/enter", ""); res.StatusCode != 200 {
			t.Fatalf("%s: anonymous enter: %d %s", s.proxy, res.StatusCode, body)
		}
		req, _ := http.NewRequest("GET", s.base+"/_wr/api/v1/rooms/sale/events", nil)
		req.Header.Set("Accept", "text/event-stream")
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("%s: events: %d %s", s.proxy, res.StatusCode, res.Header.Get("Content-Type"))
		}
		sse := &systemtest.SSEStream{Res: res, R: sseclient.NewReader(bufio.NewReaderSize(res.Body, 4096))}
		if typ, m := sse.Next(t); typ != "status" || m.Status != "WAITING" {
			t.Fatalf("%s: first event %s %+v, want the WAITING status", s.proxy, typ, m)
		}
		ws, status := s.dialWSVia(c, "/_wr/api/v1/rooms/sale/ws")
		if status != 101 {
			t.Fatalf("%s: the waiting room's WebSocket: %d", s.proxy, status)
		}
		if m := systemtest.ReadWS(t, ws); m.Status != "WAITING" {
			t.Fatalf("%s: the WebSocket's first message %+v, want the WAITING status", s.proxy, m)
		}

		// The origin's WebSocket: unprotected, then protected.
		if ws, status := s.dialWSVia(nil, "/public/ws"); status != 101 {
			t.Fatalf("%s: /public/ws: %d, want 101", s.proxy, status)
		} else if _, msg, err := ws.ReadMessage(); err != nil || string(msg) != "hello from public-ws" {
			t.Fatalf("%s: /public/ws said %q, %v", s.proxy, msg, err)
		}
		if _, status := s.dialWSVia(c, "/checkout/ws"); status != 403 {
			t.Fatalf("%s: /checkout/ws without a pass: %d, want 403", s.proxy, status)
		}
		s.admit(c)
		ws, status = s.dialWSVia(c, "/checkout/ws")
		if status != 101 {
			t.Fatalf("%s: /checkout/ws once admitted: %d, want 101", s.proxy, status)
		}
		if _, msg, err := ws.ReadMessage(); err != nil || string(msg) != "hello from ws" {
			t.Fatalf("%s: /checkout/ws said %q, %v", s.proxy, msg, err)
		}
		if h := s.lastHit(); h.Handler != "ws" || s.verify(h).Room != "sale" {
			t.Errorf("%s: the origin's WebSocket got %+v", s.proxy, h)
		}
		noProtectedWithoutPass(t, s.proxy, s.log())
	})
}

// TestProxiesRefuseInTheContract: refusals other than pass_required reach
// the visitor with their status and the contract's JSON through each
// proxy (nginx turns the 403 with Waitingroom-Status back into them): a
// path origins read differently is 400 invalid_request; and with the
// waiting room unreachable nothing reaches the origin (closed, not open).
func TestProxiesRefuseInTheContract(t *testing.T) {
	forwardAuthSites(t, func(t *testing.T, s *proxiedSite) {
		c := s.visitor()
		for _, path := range []string{"/checkout/%C0%AFx", "/api/orders%E9"} {
			method := map[bool]string{true: "POST", false: "GET"}[strings.HasPrefix(path, "/api/")]
			res, body := s.send(c, method, path, "", "Accept", "application/json")
			var m map[string]any
			if err := json.Unmarshal([]byte(body), &m); err != nil || res.StatusCode != 400 || m["error"] != "invalid_request" ||
				res.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%s: %s %s: %d %s %q, want 400 invalid_request JSON", s.proxy, method, path, res.StatusCode,
					res.Header.Get("Content-Type"), body)
			}
		}
		if hs := s.log(); len(hs) != 0 {
			t.Errorf("%s: the origin got %+v, want nothing", s.proxy, hs)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		originBase, hits := startExpress(t)
		for _, p := range systemtest.FrontProxies {
			t.Run(p.Name, func(t *testing.T) {
				base := startProxy(t, p, systemtest.FreePort(t), strings.TrimPrefix(originBase, "http://"))
				s := &proxiedSite{t: t, proxy: p.Name, base: base}
				c := s.visitor()
				for _, path := range []string{"/public", "/checkout/x"} {
					res, body := s.send(c, "GET", path, "")
					var m map[string]any
					if err := json.Unmarshal([]byte(body), &m); err != nil || res.StatusCode != 503 || m["error"] != "unavailable" {
						t.Errorf("%s: GET %s with the waiting room down: %d %q, want 503 unavailable JSON", p.Name, path, res.StatusCode, body)
					}
				}
			})
		}
		if hs := hits(); len(hs) != 0 {
			t.Errorf("the origin got %+v, want nothing", hs)
		}
	})
}

// TestProxiesSessionPass: in pass mode "session" the session cookie the
// first protected request opens reaches the visitor through each proxy
// and lets the next request through with the same session's pass; past
// the session's rate the refusal is 429 rate_limited with Retry-After
// and the contract's JSON (through nginx too, from Waitingroom-Status).
func TestProxiesSessionPass(t *testing.T) {
	originBase, hits := startExpress(t)
	in := systemtest.NewRedisOnlyEnv(t).Start(forwardAuthVars())
	systemtest.SetGateway(t, in, "sale", map[string]any{"pass": "session", "sessionRate": 0.01, "sessionBurst": 2})
	eachProxy(t, in, originBase, hits, func(t *testing.T, s *proxiedSite) {
		c := s.visitor()
		s.admit(c)
		res, _ := s.send(c, "GET", "/checkout/x", "")
		if res.StatusCode != 200 {
			t.Fatalf("%s: the first protected request: %d", s.proxy, res.StatusCode)
		}
		if got := ownCookies(res); len(got) != 1 || !strings.HasPrefix(got[0], gateway.SessionCookie("sale")+"=") {
			t.Fatalf("%s: the first protected request set %v, want the session cookie alone", s.proxy, got)
		}
		first := s.verify(s.lastHit())
		if first.Mode != pass.ModeSession {
			t.Fatalf("%s: the first pass: %+v, want a session pass", s.proxy, first)
		}
		if res, _ := s.send(c, "GET", "/checkout/y", ""); res.StatusCode != 200 {
			t.Fatalf("%s: the second, in the session: %d", s.proxy, res.StatusCode)
		}
		if p := s.verify(s.lastHit()); p.PassID != first.PassID {
			t.Errorf("%s: the second pass %+v, want the session's (id %s)", s.proxy, p, first.PassID)
		}
		// One request every 100 s after a burst of 2: within a few, one is
		// refused.
		var limited string
		for i := 0; i < 4 && limited == ""; i++ {
			path := fmt.Sprintf("/checkout/z%d", i)
			res, body := s.send(c, "GET", path, "", "Accept", "application/json")
			if res.StatusCode == 200 {
				continue
			}
			limited = path
			var m map[string]any
			if err := json.Unmarshal([]byte(body), &m); err != nil || res.StatusCode != 429 || m["error"] != "rate_limited" ||
				res.Header.Get("Retry-After") == "" || res.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%s: past the session's rate: %d %v %q, want 429 rate_limited JSON with Retry-After", s.proxy, res.StatusCode, res.Header, body)
			}
		}
		if limited == "" {
			t.Fatalf("%s: 6 requests of a session allowed 2 at once and one per 100 s all passed", s.proxy)
		}
		if h := s.lastHit(); h.URL == limited {
			t.Errorf("%s: the origin got the limited request", s.proxy)
		}
		noProtectedWithoutPass(t, s.proxy, s.log())
	})
}
