package gateway

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/gateway"
	"waitingroom/server/pass"
	"waitingroom/server/pass/passcheck"
	"waitingroom/server/pow"
)

// admitted enters room anonymously and polls until READY (the entry
// cookie is then set).
func admitted(t testing.TB, in *systemtest.Instance, c *http.Client, room string) {
	t.Helper()
	if code, _, m := systemtest.Call(t, c, "POST", in.Base+"/_wr/api/v1/rooms/"+room+"/enter", ""); code != 200 {
		t.Fatalf("anonymous enter: %d %v", code, m)
	}
	systemtest.WaitFor(t, "READY", func() bool {
		_, _, m := systemtest.Call(t, c, "GET", in.Base+"/_wr/api/v1/rooms/"+room+"/position", "")
		return m["status"] == "READY"
	})
}

// TestGatewayForwardsUnprotected: method, path, query and body reach the
// origin; hop-by-hop headers, the waiting room's cookies and a client's
// own pass header do not; the forwarding headers say who asked.
func TestGatewayForwardsUnprotected(t *testing.T) {
	o := systemtest.StartOrigin(t)
	in := systemtest.GatewayInstance(t, o, nil)
	c := systemtest.Visitor(t)
	code, _, m := systemtest.Call(t, c, "PUT", in.Base+"/api/items/7?x=1&y=%20z", `{"a":1}`,
		"Connection", "X-Foo", "X-Foo", "bar", "X-Forwarded-For", "6.6.6.6", passcheck.HeaderName, "forged",
		"Cookie", "wr_queue=secret; __Host-wr_queue_sale=secret; wr_entry_sale=x; wr_session_sale=y; wr_visitor=z; theirs=1; wr_theirs=2")
	if code != 200 || m["method"] != "PUT" || m["uri"] != "/api/items/7?x=1&y=%20z" || m["len"] != float64(7) {
		t.Fatalf("forwarded: %d %v", code, m)
	}
	if m["foo"] != "" || m["xff"] != "127.0.0.1" || m["cookie"] != "theirs=1; wr_theirs=2" || m["subject"] != "" ||
		!strings.HasPrefix(m["fwd"].(string), "for=127.0.0.1;proto=http;host=") {
		t.Fatalf("headers at the origin: %v", m)
	}
	// A compressed body goes to the origin as it is; the waiting room's own
	// API still refuses one.
	if code, _, m := systemtest.Call(t, c, "POST", in.Base+"/upload", "\x1f\x8b", "Content-Encoding", "gzip"); code != 200 || m["encoding"] != "gzip" {
		t.Fatalf("compressed body to the origin: %d %v", code, m)
	}
	if code, _, _ := systemtest.Call(t, c, "POST", in.Base+"/_wr/api/v1/auth/login", "\x1f\x8b", "Content-Encoding", "gzip"); code != 415 {
		t.Fatalf("compressed body to /_wr/: %d, want 415", code)
	}
	// The origin's bodies may be larger than the waiting room's own.
	big := strings.Repeat("y", 20<<10)
	if code, _, m := systemtest.Call(t, c, "POST", in.Base+"/upload", big); code != 200 || m["len"] != float64(len(big)) {
		t.Fatalf("20 KiB body to the origin: %d %v", code, m)
	}
	if code, _, m := systemtest.Call(t, c, "POST", in.Base+"/_wr/api/v1/auth/login", big); code != 413 || m["error"] != "payload_too_large" {
		t.Fatalf("20 KiB body to /_wr/: %d %v, want 413", code, m)
	}
	// Responses are streamed whatever their size (a download is not a
	// request body); headers past 64 KiB are the origin's fault: 502.
	res, err := c.Get(in.Base + "/big")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || n != 200<<10 {
		t.Fatalf("a 200 KiB answer (4× WR_UPSTREAM_BODY_LIMIT): %d, %d bytes", res.StatusCode, n)
	}
	if code, _, m := systemtest.Call(t, c, "GET", in.Base+"/huge-headers", ""); code != 502 || m["error"] != "bad_gateway" {
		t.Fatalf("100 KiB of headers: %d %v, want 502 bad_gateway", code, m)
	}
}

// TestGatewayWithoutAPass: a page navigation goes to the waiting page and
// back; anything else gets 403 pass_required with the room and the page.
func TestGatewayWithoutAPass(t *testing.T) {
	o := systemtest.StartOrigin(t)
	in := systemtest.GatewayInstance(t, o, nil)
	c := systemtest.Visitor(t)
	code, h, _ := systemtest.Call(t, c, "GET", in.Base+"/checkout/cart?step=2", "", "Accept", "text/html,application/xhtml+xml")
	if code != 303 || h.Get("Location") != "/_wr/rooms/sale?return=%2Fcheckout%2Fcart%3Fstep%3D2" || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("navigation: %d %v", code, h)
	}
	code, _, m := systemtest.Call(t, c, "POST", in.Base+"/checkout/pay", `{}`, "Accept", "application/json")
	if code != 403 || m["error"] != "pass_required" || m["room"] != "sale" || m["pageUrl"] != "/_wr/rooms/sale?return=%2Fcheckout%2Fpay" {
		t.Fatalf("API request: %d %v", code, m)
	}
	if o.Requests.Load() != 0 {
		t.Fatalf("the origin saw %d protected requests without a pass", o.Requests.Load())
	}
	// The waiting page is there, with its assets under /_wr/.
	res, err := c.Get(in.Base + "/_wr/rooms/sale?return=%2Fcheckout%2Fcart")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(page), `src="/_wr/static/app.js"`) || !strings.Contains(string(page), `data-base="/_wr"`) {
		t.Fatalf("waiting page: %d %.300s", res.StatusCode, page)
	}
}

// TestGatewayOncePass: an admitted visitor's first protected request
// carries a pass the origin verifies; the entry token is then spent, and
// the visit it opened lets the visitor's next protected requests through
// with the same pass id. An origin that fails or times out does not spend
// it (up to gateway.MaxRestores times: TestGatewayOncePassRestoredAtMost).
func TestGatewayOncePass(t *testing.T) {
	systemtest.LongScenario(t)
	o := systemtest.StartOrigin(t)
	in := systemtest.GatewayInstance(t, o, nil)
	c, d := systemtest.Visitor(t), systemtest.Visitor(t)
	admitted(t, in, c, "sale")
	admitted(t, in, d, "sale")
	if code, _, m := systemtest.Call(t, c, "GET", in.Base+"/checkout/fail", ""); code != 500 {
		t.Fatalf("origin 500: %d %v", code, m)
	}
	if code, _, m := systemtest.Call(t, c, "GET", in.Base+"/checkout/slow", ""); code != 504 || m["error"] != "gateway_timeout" {
		t.Fatalf("origin too slow: %d %v, want 504", code, m)
	}
	for _, path := range []string{"/checkout/reset", "/checkout/malformed"} {
		if code, _, m := systemtest.Call(t, d, "GET", in.Base+path, ""); code != 502 || m["error"] != "bad_gateway" {
			t.Fatalf("%s: %d %v, want 502", path, code, m)
		}
	}
	site, _ := url.Parse(in.Base)
	var spent []*http.Cookie // c's cookies as the first pass found them
	for _, c := range c.Jar.Cookies(site) {
		if c.Name != gateway.VisitCookie("sale") {
			spent = append(spent, c)
		}
	}
	jti := map[*http.Client]any{}
	for _, v := range []*http.Client{c, d} {
		code, _, m := systemtest.Call(t, v, "GET", in.Base+"/checkout/cart", "")
		if code != 200 || m["room"] != "sale" || !strings.HasSuffix(m["subject"].(string), "/once") || !strings.HasPrefix(m["subject"].(string), "v-") {
			t.Fatalf("with the pass (kept after the failures): %d %v", code, m)
		}
		jti[v] = m["jti"]
	}
	if jti[c] == jti[d] || jti[c] == "" {
		t.Fatalf("two visitors' pass ids: %v and %v", jti[c], jti[d])
	}
	// The visit: the same pass id, for the page's other requests.
	if code, _, m := systemtest.Call(t, c, "GET", in.Base+"/checkout/style.css", ""); code != 200 || m["jti"] != jti[c] || !strings.HasSuffix(m["subject"].(string), "/once") {
		t.Fatalf("second request, in the visit: %d %v, want 200 with pass id %v", code, m, jti[c])
	}
	// The entry token alone is spent.
	bare := systemtest.Visitor(t)
	bare.Jar.SetCookies(site, spent)
	if code, _, m := systemtest.Call(t, bare, "GET", in.Base+"/checkout/cart", ""); code != 403 || m["error"] != "pass_required" {
		t.Fatalf("the spent entry token without the visit: %d %v, want 403 pass_required", code, m)
	}
	// The origin's own answers by class, the gateway's 502 and 504 apart.
	for _, want := range []struct {
		name   string
		labels []string
		n      float64
	}{
		{"waitingroom_gateway_origin_responses_total", []string{"kind=protected", "class=5xx"}, 1},
		{"waitingroom_gateway_origin_responses_total", []string{"kind=protected", "class=2xx"}, 3},
		{"waitingroom_gateway_origin_responses_total", []string{"kind=protected"}, 4},
		{"waitingroom_gateway_requests_total", []string{"kind=protected", "outcome=forwarded"}, 4},
		{"waitingroom_gateway_requests_total", []string{"kind=protected", "outcome=timeout"}, 1},
		{"waitingroom_gateway_requests_total", []string{"kind=protected", "outcome=bad_gateway"}, 2},
		{"waitingroom_gateway_requests_total", []string{"kind=protected", "outcome=no_pass"}, 1},
	} {
		if got := in.MetricWhere(want.name, want.labels...); got != want.n {
			t.Errorf("%s%v = %v, want %v", want.name, want.labels, got, want.n)
		}
	}
	// Another visitor's forged cookie gets nothing.
	other := systemtest.Visitor(t)
	if code, _, _ := systemtest.Call(t, other, "GET", in.Base+"/checkout/cart", "", "Cookie", "wr_entry_sale=forged; wr_queue=forged"); code != 403 {
		t.Fatalf("forged cookies: %d, want 403", code)
	}
}

// TestGatewaySessionPass: in mode session, an admitted visitor uses the
// protected routes repeatedly, with the same pass id, while the slot is
// held toward targetActive.
func TestGatewaySessionPass(t *testing.T) {
	o := systemtest.StartOrigin(t)
	in := systemtest.GatewayInstance(t, o, map[string]string{"WR_TARGET_ACTIVE": "1"})
	systemtest.SetGateway(t, in, "sale", map[string]any{"pass": "session", "sessionTtl": "1m", "sessionMaxTtl": 3600})
	a := systemtest.Visitor(t)
	admitted(t, in, a, "sale")
	for i := range 3 {
		if code, _, m := systemtest.Call(t, a, "GET", in.Base+fmt.Sprintf("/checkout/step%d", i), ""); code != 200 || !strings.HasSuffix(m["subject"].(string), "/session") {
			t.Fatalf("session request %d: %d %v", i, code, m)
		}
	}
	// The session holds the room's one slot: a second visitor waits.
	b := systemtest.Visitor(t)
	if code, _, _ := systemtest.Call(t, b, "POST", in.Base+"/_wr/api/v1/rooms/sale/enter", ""); code != 200 {
		t.Fatal("second visitor's enter")
	}
	time.Sleep(200 * time.Millisecond) // ten admission ticks
	if _, _, m := systemtest.Call(t, b, "GET", in.Base+"/_wr/api/v1/rooms/sale/position", ""); m["status"] != "WAITING" {
		t.Fatalf("second visitor while the session holds the slot: %v, want WAITING", m)
	}
}

// TestGatewayAdminSettings: a room's gateway settings are read and changed
// through the admin API; a bad value is a 400 naming it, and changes nothing.
func TestGatewayAdminSettings(t *testing.T) {
	o := systemtest.StartOrigin(t)
	in := systemtest.GatewayInstance(t, o, nil)
	g := in.AdminRoom("sale").Body["gateway"].(map[string]any)
	if g["challenge"] != "off" || g["pass"] != "once" || g["protectFrom"] != "WR_PROTECT" || len(g["protect"].([]any)) != 2 {
		t.Fatalf("defaults: %v", g)
	}
	r := systemtest.SetGateway(t, in, "sale", map[string]any{"challenge": "pow", "difficulty": 12, "protect": []string{"POST /api/orders"}})
	g = r.Body["gateway"].(map[string]any)
	if g["challenge"] != "pow" || g["difficulty"] != float64(12) || g["protectFrom"] != "room" || g["protect"].([]any)[0] != "POST /api/orders" {
		t.Fatalf("after PUT: %v", g)
	}
	// The new routes are in force: /checkout/ is no longer protected, orders are.
	c := systemtest.Visitor(t)
	if code, _, _ := systemtest.Call(t, c, "GET", in.Base+"/checkout/cart", ""); code != 200 {
		t.Fatalf("/checkout/cart after the change: %d, want 200 (unprotected)", code)
	}
	if code, _, m := systemtest.Call(t, c, "POST", in.Base+"/api/orders", "{}"); code != 403 || m["error"] != "pass_required" {
		t.Fatalf("POST /api/orders after the change: %d %v", code, m)
	}
	for _, bad := range []map[string]any{{"challenge": "captcha"}, {"difficulty": 99}, {"pass": "forever"},
		{"sessionTtl": "1s"}, {"protect": []string{"GET /_wr/x"}}, {"protect": "GET /x"}, {"colour": "red"}} {
		r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/sale", systemtest.TestAdminToken, map[string]any{"gateway": bad})
		if r.Status != 400 {
			t.Errorf("PUT %v: %d %s, want 400", bad, r.Status, r.Raw)
		}
		if _, ok := bad["protect"].(string); ok && !strings.Contains(r.Str("message"), "or null for WR_PROTECT's") {
			t.Errorf("PUT %v: %s, want a message naming WR_PROTECT", bad, r.Raw)
		}
	}
	if g := in.AdminRoom("sale").Body["gateway"].(map[string]any); g["challenge"] != "pow" || g["difficulty"] != float64(12) {
		t.Fatalf("a refused PUT changed the settings: %v", g)
	}
	// Back to WR_PROTECT's routes.
	if g := systemtest.SetGateway(t, in, "sale", map[string]any{"protect": nil}).Body["gateway"].(map[string]any); g["protectFrom"] != "WR_PROTECT" {
		t.Fatalf("protect null: %v", g)
	}
}

// TestGatewayOriginDown: an origin that is gone is 502 in the contract's
// JSON, and a once pass is kept for the retry.
func TestGatewayOriginDown(t *testing.T) {
	o := systemtest.StartOrigin(t)
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + l.Addr().String()
	l.Close()
	in := systemtest.GatewayInstance(t, o, map[string]string{"WR_UPSTREAM": dead})
	c := systemtest.Visitor(t)
	if code, _, m := systemtest.Call(t, c, "GET", in.Base+"/", ""); code != 502 || m["error"] != "bad_gateway" {
		t.Fatalf("origin down: %d %v, want 502", code, m)
	}
	admitted(t, in, c, "sale")
	if code, _, _ := systemtest.Call(t, c, "GET", in.Base+"/checkout/cart", ""); code != 502 {
		t.Fatalf("protected, origin down: %d, want 502", code)
	}
	if code, _, _ := systemtest.Call(t, c, "GET", in.Base+"/checkout/cart", ""); code != 502 {
		t.Fatalf("retry, origin still down: %d, want 502 (not 403: the pass was kept)", code)
	}
}

// TestGatewayInFrontOfTheDemoShop: the demo shop — a waiting room instance
// without a gateway — is the origin: its login goes straight through, and
// its product API, protected, needs a pass.
func TestGatewayInFrontOfTheDemoShop(t *testing.T) {
	shop := systemtest.NewEnv(t).Start(nil)
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_UPSTREAM": shop.Base, "WR_PROTECT": "GET /api/v1/products/*=sale",
		"WR_PASS_KEY": pass.GenerateKey(), "WR_ROOMS": "sale", "WR_ADMIT_INTERVAL": "20ms"})
	c := systemtest.Visitor(t)
	code, _, m := systemtest.Call(t, c, "POST", in.Base+"/api/v1/auth/login", `{"loginId":"user1","password":"`+systemtest.TestPassword+`"}`,
		"Content-Type", "application/json")
	if code != 200 || m["accessToken"] == nil {
		t.Fatalf("the shop's login through the gateway: %d %v", code, m)
	}
	if code, _, m := systemtest.Call(t, c, "GET", in.Base+"/api/v1/products/1", ""); code != 403 || m["error"] != "pass_required" {
		t.Fatalf("product without a pass: %d %v", code, m)
	}
	admitted(t, in, c, "sale")
	if code, _, m := systemtest.Call(t, c, "GET", in.Base+"/api/v1/products/1", ""); code != 200 || m["id"] != float64(1) {
		t.Fatalf("product with a pass: %d %v", code, m)
	}
}

// TestGatewayProofOfWork: in a room with challenge pow, an anonymous enter
// needs a solved challenge bound to the visitor, spent once; a visitor
// already in the queue (a reload) keeps its place without one.
func TestGatewayProofOfWork(t *testing.T) {
	o := systemtest.StartOrigin(t)
	in := systemtest.GatewayInstance(t, o, nil)
	systemtest.SetGateway(t, in, "sale", map[string]any{"challenge": "pow", "difficulty": 8})
	a := systemtest.Visitor(t)
	enter := in.Base + "/_wr/api/v1/rooms/sale/enter"
	if code, _, m := systemtest.Call(t, a, "POST", enter, ""); code != 403 || m["error"] != "challenge_required" {
		t.Fatalf("enter without a solution: %d %v", code, m)
	}
	code, _, ch := systemtest.Call(t, a, "GET", in.Base+"/_wr/api/v1/rooms/sale/challenge", "")
	if code != 200 || ch["required"] != true || ch["difficulty"] != float64(8) {
		t.Fatalf("challenge: %d %v", code, ch)
	}
	tok := ch["challenge"].(string)
	body := fmt.Sprintf(`{"challenge":%q,"solution":%q}`, tok, pow.Solve(tok, 8))
	// Another visitor cannot use it: it is bound to the one it was issued to.
	if code, _, m := systemtest.Call(t, systemtest.Visitor(t), "POST", enter, body, "Content-Type", "application/json"); code != 403 || m["error"] != "challenge_invalid" {
		t.Fatalf("someone else's challenge: %d %v", code, m)
	}
	if code, _, m := systemtest.Call(t, a, "POST", enter, `{"challenge":"`+tok+`","solution":"0"}`, "Content-Type", "application/json"); code != 403 || m["error"] != "challenge_invalid" {
		t.Fatalf("unsolved challenge: %d %v", code, m)
	}
	if code, _, m := systemtest.Call(t, a, "POST", enter, body, "Content-Type", "application/json"); code != 200 || m["status"] == nil {
		t.Fatalf("solved: %d %v", code, m)
	}
	// A reload: already in the queue, no new work asked.
	if code, _, m := systemtest.Call(t, a, "POST", enter, ""); code != 200 {
		t.Fatalf("enter again while in the queue: %d %v", code, m)
	}
	// Left, the same solution is spent.
	if code, _, _ := systemtest.Call(t, a, "POST", in.Base+"/_wr/api/v1/rooms/sale/leave", ""); code != 204 {
		t.Fatalf("leave: %d", code)
	}
	if code, _, m := systemtest.Call(t, a, "POST", enter, body, "Content-Type", "application/json"); code != 403 || m["error"] != "challenge_invalid" {
		t.Fatalf("replayed solution: %d %v", code, m)
	}
	if n := in.Metric("waitingroom_security_events_total"); n < 3 {
		t.Fatalf("security events: %v, want the refused challenges counted", n)
	}
}

// TestGatewayFeedsAdaptiveAdmission: the latency and failures of protected
// requests, as the gateway sees them, are an adaptive room's signals — no
// instrumentation of the origin. Each visitor counts once a window
// (TestGatewayOneVisitorCannotSteerAdmission).
func TestGatewayFeedsAdaptiveAdmission(t *testing.T) {
	o := systemtest.StartOrigin(t)
	in := systemtest.GatewayInstance(t, o, map[string]string{"WR_ADAPTIVE_WINDOW": "200ms", "WR_TARGET_ACTIVE": "10"})
	systemtest.SetGateway(t, in, "sale", map[string]any{"pass": "session"})
	var cs []*http.Client
	for range 6 {
		c := systemtest.Visitor(t)
		admitted(t, in, c, "sale")
		cs = append(cs, c)
	}
	if r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/sale", systemtest.TestAdminToken, map[string]any{"mode": "adaptive"}); r.Status != 200 {
		t.Fatalf("adaptive mode: %d %s", r.Status, r.Raw)
	}
	systemtest.WaitFor(t, "the gateway's requests in the room's signals", func() bool {
		var wg sync.WaitGroup // all in one window, however slow the machine
		for i, c := range cs {
			path := "/checkout/cart"
			if i%2 == 1 {
				path = "/checkout/fail"
			}
			wg.Go(func() { systemtest.Call(t, c, "GET", in.Base+path, "") })
		}
		wg.Wait()
		sig, _ := in.AdminRoom("sale").Body["signals"].(map[string]any)
		return sig["orders"].(float64) >= 6 && sig["errors"].(float64) >= 3
	})
}

// TestGatewayWebSocket: a WebSocket upgrade is joined to the origin — on an
// unprotected path at once, on a protected one with a pass.
func TestGatewayWebSocket(t *testing.T) {
	o := systemtest.StartOrigin(t)
	in := systemtest.GatewayInstance(t, o, nil)
	ws := "ws" + strings.TrimPrefix(in.Base, "http")
	dial := func(c *http.Client, path string) (*websocket.Conn, int) {
		d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
		if c != nil {
			d.Jar = c.Jar
		}
		conn, res, err := d.Dial(ws+path, nil)
		if err != nil {
			if res != nil {
				return nil, res.StatusCode
			}
			t.Fatalf("dial %s: %v", path, err)
		}
		return conn, 101
	}
	echo := func(conn *websocket.Conn, wantPass string) {
		defer conn.Close()
		_, first, err := conn.ReadMessage()
		if err != nil || string(first) != "pass="+wantPass {
			t.Fatalf("first message %q, %v; want pass=%s", first, err, wantPass)
		}
		if err := conn.WriteMessage(websocket.TextMessage, []byte("hello")); err != nil {
			t.Fatal(err)
		}
		if _, back, err := conn.ReadMessage(); err != nil || string(back) != "hello" {
			t.Fatalf("echo %q, %v", back, err)
		}
	}
	conn, code := dial(nil, "/ws/echo")
	if code != 101 {
		t.Fatalf("unprotected upgrade: %d", code)
	}
	echo(conn, "false")
	if _, code := dial(nil, "/checkout/ws"); code != 403 {
		t.Fatalf("protected upgrade without a pass: %d, want 403", code)
	}
	c := systemtest.Visitor(t)
	admitted(t, in, c, "sale")
	conn, code = dial(c, "/checkout/ws")
	if code != 101 {
		t.Fatalf("protected upgrade with a pass: %d", code)
	}
	echo(conn, "true")
}

// TestGatewayTwoRooms: one visitor waiting in two rooms of one site holds a
// queue cookie per room; each room's pass works.
func TestGatewayTwoRooms(t *testing.T) {
	o := systemtest.StartOrigin(t)
	in := systemtest.GatewayInstance(t, o, map[string]string{"WR_PROTECT": "GET /checkout/*=sale, GET /vip/*=vip", "WR_ROOMS": "sale,vip"})
	c := systemtest.Visitor(t)
	admitted(t, in, c, "sale")
	admitted(t, in, c, "vip")
	for _, path := range []string{"/checkout/a", "/vip/b"} {
		if code, _, m := systemtest.Call(t, c, "GET", in.Base+path, ""); code != 200 || m["room"] == "" {
			t.Fatalf("%s: %d %v", path, code, m)
		}
	}
}

// TestGatewayHostile: the gateway's own endpoints under /_wr/ refuse in the
// contract's JSON — one address flooding anonymous enters is limited while
// another is served; a malformed challenge body, a foreign origin's
// cookie-borne request and an invalid room name are refused.
func TestGatewayHostile(t *testing.T) {
	o := systemtest.StartOrigin(t)
	in := systemtest.GatewayInstance(t, o, systemtest.BehindProxy(systemtest.Limited(map[string]string{"WR_LIMIT_ENTER_NEW_IP": "5/1m:5"})))
	enter := in.Base + "/_wr/api/v1/rooms/sale/enter"
	codes := map[int]int{}
	var last map[string]any
	var retry string
	for range 12 {
		// A fresh visitor each time (no cookie jar): only the address is shared.
		code, h, m := systemtest.Call(t, http.DefaultClient, "POST", enter, "", "X-Real-IP", "203.0.113.9")
		codes[code]++
		if code == 429 {
			last, retry = m, h.Get("Retry-After")
		}
	}
	if codes[200] != 5 || codes[429] != 7 || last["error"] != "rate_limited" || retry == "" {
		t.Fatalf("flood from one address: %v, last refusal %v (Retry-After %q); want 5 × 200 then 429 rate_limited", codes, last, retry)
	}
	if code, _, m := systemtest.Call(t, http.DefaultClient, "POST", enter, "", "X-Real-IP", "203.0.113.10"); code != 200 {
		t.Fatalf("another address during the flood: %d %v", code, m)
	}

	systemtest.SetGateway(t, in, "sale", map[string]any{"challenge": "pow", "difficulty": 4})
	if code, _, m := systemtest.Call(t, systemtest.Visitor(t), "POST", enter, `{"challenge":`, "Content-Type", "application/json", "X-Real-IP", "203.0.113.11"); code != 400 || m["error"] != "invalid_request" {
		t.Fatalf("malformed challenge body: %d %v, want 400 invalid_request", code, m)
	}
	if code, _, m := systemtest.Call(t, systemtest.Visitor(t), "GET", in.Base+"/_wr/api/v1/rooms/%7Bbad/challenge", ""); code != 404 || m["error"] != "room_not_found" {
		t.Fatalf("challenge of an invalid room: %d %v, want 404 room_not_found", code, m)
	}

	// A state change carried by the queue cookie from a foreign origin.
	systemtest.SetGateway(t, in, "sale", map[string]any{"challenge": "off"})
	c := systemtest.Visitor(t)
	if code, _, _ := systemtest.Call(t, c, "POST", enter, "", "X-Real-IP", "203.0.113.12"); code != 200 {
		t.Fatal("enter before the cross-site attempt")
	}
	code, _, m := systemtest.Call(t, c, "POST", in.Base+"/_wr/api/v1/rooms/sale/leave", "",
		"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site", "X-Real-IP", "203.0.113.12")
	if code != 403 || m["error"] != "cross_site" {
		t.Fatalf("cross-site leave: %d %v, want 403 cross_site", code, m)
	}
	if _, _, m := systemtest.Call(t, c, "GET", in.Base+"/_wr/api/v1/rooms/sale/position", "", "X-Real-IP", "203.0.113.12"); m["status"] == nil {
		t.Fatalf("the place after the refused cross-site leave: %v", m)
	}
}
