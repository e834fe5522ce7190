package gateway

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"waitingroom/cmd/waitingroom/compose"
	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/gateway"
	"waitingroom/server/pass"
	"waitingroom/server/pass/passcheck"
)

// The decisions of /_wr/auth as a proxy asks them (the proxy's side, through
// real nginx and Caddy, is in the proxy tests). The test client plays the
// proxy: 127.0.0.1 is WR_TRUSTED_PROXIES.

// notForwardedMessage is forward auth's 404 for a path outside /_wr/.
const notForwardedMessage = "forward auth (WR_FORWARD_AUTH=on): this port serves /_wr/ only; the site's proxy routes the rest and asks /_wr/auth"

// TestForwardAuthDecisions: unprotected requests pass with no Redis call;
// a protected one without a pass is sent to the waiting page (nginx: 401
// with the Location) or refused with pass_required (nginx: 403 with the
// real status and body in headers); once admitted, the first protected
// request spends the entry token and opens a visit, whose later requests
// pass with the same pass id and no Redis call.
func TestForwardAuthDecisions(t *testing.T) {
	for _, nginx := range []bool{true, false} {
		t.Run(map[bool]string{true: "nginx", false: "forwarded"}[nginx], func(t *testing.T) {
			in := systemtest.ForwardAuthInstance(t, nil)
			counter := systemtest.CountRedis(t, in.Env)
			check, err := passcheck.New(passcheck.Options{JWKSURL: in.Base + "/_wr/.well-known/jwks.json", Rooms: []string{"sale"}})
			if err != nil {
				t.Fatal(err)
			}
			c := systemtest.Visitor(t)
			before := counter.Snapshot()
			for _, uri := range []string{"/", "/public?x=1", "/api/orders", "/checkoutx"} {
				if code, h, _ := systemtest.Ask(t, in, c, nginx, "GET", uri); code != 200 || h.Get("Waitingroom-Pass") != "" || h.Get("Set-Cookie") != "" {
					t.Fatalf("unprotected GET %s: %d %v", uri, code, h)
				}
			}
			if n := counter.Since(before)["pass"]; n != 0 {
				t.Fatalf("unprotected decisions ran %d pass scripts", n)
			}

			code, h, _ := systemtest.Ask(t, in, c, nginx, "GET", "/checkout/cart?step=2", "Accept", "text/html")
			page := "/_wr/rooms/sale?return=%2Fcheckout%2Fcart%3Fstep%3D2"
			if want := map[bool]int{true: 401, false: 303}[nginx]; code != want || h.Get("Location") != page {
				t.Fatalf("navigation without a pass: %d %v, want %d to %s", code, h, want, page)
			}
			code, h, m := systemtest.Ask(t, in, c, nginx, "POST", "/api/orders")
			if code != 403 || m["error"] != "pass_required" || m["room"] != "sale" {
				t.Fatalf("API request without a pass: %d %v", code, m)
			}
			if nginx && (h.Get("Waitingroom-Status") != "403" || !strings.Contains(h.Get("Waitingroom-Answer"), `"error":"pass_required"`)) {
				t.Fatalf("nginx's refusal headers: %v", h)
			}

			admitted(t, in, c, "sale")
			before = counter.Snapshot()
			code, h, _ = systemtest.Ask(t, in, c, nginx, "GET", "/checkout/", "Accept", "text/html")
			if code != 200 || len(h.Values("Set-Cookie")) != 1 || !strings.HasPrefix(h.Get("Set-Cookie"), gateway.VisitCookie("sale")+"=") {
				t.Fatalf("admitted navigation: %d %v, want 200 with one Set-Cookie, the visit's", code, h)
			}
			first, err := check.Verify(h.Get("Waitingroom-Pass"))
			if err != nil || first.Mode != pass.ModeOnce || !strings.HasPrefix(first.Subject, "v-") {
				t.Fatalf("the pass: %+v %v", first, err)
			}
			if n := counter.Since(before)["pass"]; n != 2 { // consume, release
				t.Fatalf("spending the entry token ran %d pass scripts, want 2", n)
			}
			before = counter.Snapshot()
			for _, r := range [][2]string{{"GET", "/checkout/style.css"}, {"GET", "/checkout/logo.svg"}, {"POST", "/api/orders"}} {
				code, h, _ := systemtest.Ask(t, in, c, nginx, r[0], r[1])
				p, err := check.Verify(h.Get("Waitingroom-Pass"))
				if code != 200 || err != nil || p.PassID != first.PassID || h.Get("Set-Cookie") != "" {
					t.Fatalf("%s %s in the visit: %d %v %v", r[0], r[1], code, err, h)
				}
			}
			if n := counter.Since(before)["pass"]; n != 0 {
				t.Fatalf("the visit's requests ran %d pass scripts", n)
			}
			// The entry token is spent: without the visit cookie, nothing.
			site, _ := url.Parse(in.Base)
			bare := systemtest.Visitor(t)
			for _, k := range c.Jar.Cookies(site) {
				if k.Name != gateway.VisitCookie("sale") {
					bare.Jar.SetCookies(site, []*http.Cookie{k})
				}
			}
			if code, _, m := systemtest.Ask(t, in, bare, nginx, "POST", "/api/orders"); code != 403 || m["error"] != "pass_required" {
				t.Fatalf("the spent entry token: %d %v", code, m)
			}
			if got := in.MetricWhere("waitingroom_gateway_requests_total", "kind=protected", "outcome=allowed"); got != 4 {
				t.Fatalf("allowed protected decisions: %v, want 4", got)
			}
		})
	}
}

// TestForwardAuthRefusesWhatItCannotJudge: a question from an untrusted
// peer, in both conventions at once, or with no original request, and a
// path outside /_wr/; each in the contract's JSON.
func TestForwardAuthRefusesWhatItCannotJudge(t *testing.T) {
	in := systemtest.ForwardAuthInstance(t, nil)
	c := systemtest.Visitor(t)
	for _, tc := range []struct {
		name    string
		headers []string
		status  int
		nginx   string // Waitingroom-Status, for nginx's questions
	}{
		{"both conventions", []string{"X-Original-URI", "/public", "X-Original-Method", "GET", "X-Forwarded-Uri", "/checkout/x", "X-Forwarded-Method", "GET"}, 403, "400"},
		{"no original request", nil, 400, ""},
		{"a method in lower case", []string{"X-Forwarded-Method", "get", "X-Forwarded-Uri", "/checkout/x"}, 400, ""},
		{"no method", []string{"X-Forwarded-Uri", "/checkout/x"}, 400, ""},
		{"an absolute URI", []string{"X-Forwarded-Method", "GET", "X-Forwarded-Uri", "http://shop/checkout/x"}, 400, ""},
		{"a malformed escape", []string{"X-Original-Method", "GET", "X-Original-URI", "/checkout/%zz"}, 403, "400"},
		{"a NUL", []string{"X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/checkout/%00"}, 400, ""},
	} {
		code, h, m := systemtest.Call(t, c, "GET", in.Base+gateway.AuthPath, "", tc.headers...)
		if code != tc.status || (tc.nginx == "" && m["error"] != "invalid_request") || h.Get("Waitingroom-Status") != tc.nginx {
			t.Errorf("%s: %d %v %v, want %d (Waitingroom-Status %q)", tc.name, code, m, h, tc.status, tc.nginx)
		}
	}
	if code, _, m := systemtest.Call(t, c, "GET", in.Base+"/checkout/x", ""); code != 404 || m["error"] != "not_found" || m["message"] != notForwardedMessage {
		t.Errorf("a path outside /_wr/: %d %v, want 404 not_found naming WR_FORWARD_AUTH", code, m)
	}
	// The same routes as the gateway's, read canonically: no spelling of
	// a protected path passes without a pass; a path origins read apart
	// (the raw target, as the origin gets it) is refused.
	for _, uri := range []string{"/CHECKOUT/x", "/Api/Orders/", "/api/orders;x=1", "/api/orders.json", "/checkout//x"} {
		method := "GET"
		if strings.Contains(strings.ToLower(uri), "orders") {
			method = "POST"
		}
		if code, _, m := systemtest.Ask(t, in, c, false, method, uri); code != 403 || m["error"] != "pass_required" {
			t.Errorf("%s %s: %d %v, want 403 pass_required", method, uri, code, m)
		}
	}
	for uri, want := range map[string]string{
		"/%63heckout/x": "ambiguous_request", "/public/../checkout/x": "ambiguous_request", "/checkout/%2e%2e/checkout/x": "ambiguous_request",
		"/api%2Forders": "ambiguous_request", "/checkout/..": "ambiguous_request", "/checkout/../": "ambiguous_request",
		"/checkout%2f..": "ambiguous_request", "/checkout/%2e%2e": "ambiguous_request", "/checkout/%252e%252e": "ambiguous_request",
		"/public/..": "ambiguous_request", "//checkout/x": "invalid_request", "/x#/../checkout/x": "invalid_request",
		"/checkout#x": "invalid_request",
	} {
		method := "GET"
		if strings.Contains(uri, "orders") {
			method = "POST"
		}
		if code, _, m := systemtest.Ask(t, in, c, false, method, uri); code != 400 || m["error"] != want {
			t.Errorf("%s %s: %d %v, want 400 %s", method, uri, code, m, want)
		}
	}
	// The question carries the original request's headers: a compressed
	// body's Content-Encoding is the origin's business, judged like any
	// other request (not 415), and an oversized URI is 400.
	if code, _, m := systemtest.Ask(t, in, c, false, "POST", "/api/orders", "Content-Encoding", "gzip"); code != 403 || m["error"] != "pass_required" {
		t.Errorf("POST /api/orders with Content-Encoding: gzip: %d %v, want 403 pass_required", code, m)
	}
	if code, _, m := systemtest.Ask(t, in, c, false, "GET", "/"+strings.Repeat("a", 9<<10)); code != 400 || m["error"] != "invalid_request" {
		t.Errorf("a 9 KiB URI: %d %v, want 400 invalid_request", code, m)
	}
	// A method override sent on to the origin could turn a GET into the
	// protected POST: such a question is judged by every route.
	if code, _, m := systemtest.Ask(t, in, c, false, "GET", "/api/orders", "X-HTTP-Method-Override", "POST"); code != 403 || m["error"] != "pass_required" {
		t.Errorf("GET /api/orders with X-HTTP-Method-Override: %d %v, want 403", code, m)
	}

	untrusted := systemtest.ForwardAuthInstance(t, map[string]string{"WR_TRUSTED_PROXIES": "192.0.2.1"})
	code, _, m := systemtest.Ask(t, untrusted, c, false, "GET", "/public")
	if msg, _ := m["message"].(string); code != 403 || m["error"] != "untrusted_proxy" || !strings.Contains(msg, "proxies of WR_TRUSTED_PROXIES only") {
		t.Fatalf("a question from a peer outside WR_TRUSTED_PROXIES: %d %v, want 403 untrusted_proxy naming the variable", code, m)
	}
	// The page and API are served to anyone.
	if code, _, m := systemtest.Call(t, c, "POST", untrusted.Base+"/_wr/api/v1/rooms/sale/enter", ""); code != 200 || m["status"] == nil {
		t.Fatalf("enter from an untrusted peer: %d %v", code, m)
	}
}

// TestForwardAuthConfig: forward auth needs its proxy named, and is not
// also the origin's proxy.
func TestForwardAuthConfig(t *testing.T) {
	base := map[string]string{"WR_FORWARD_AUTH": "on", "WR_TRUSTED_PROXIES": "127.0.0.1", "WR_DEV": "1", "WR_ROOMS": "sale", "WR_PROTECT": "GET /checkout/*=sale"}
	for _, tc := range []struct {
		change map[string]string
		want   string
	}{
		{map[string]string{"WR_TRUSTED_PROXIES": ""}, "WR_FORWARD_AUTH"},
		{map[string]string{"WR_UPSTREAM": "http://127.0.0.1:9"}, "WR_FORWARD_AUTH"},
		{map[string]string{"WR_FORWARD_AUTH": "maybe"}, "WR_FORWARD_AUTH"},
		{map[string]string{"WR_FORWARD_AUTH": "off"}, "WR_PROTECT"},
	} {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for k, v := range tc.change {
			env[k] = v
		}
		_, err := compose.LoadConfig(func(k string) string { return env[k] })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %s", tc.change, err, tc.want)
		}
	}
	cfg, err := compose.LoadConfig(func(k string) string { return base[k] })
	if err != nil || !cfg.Gateway.ForwardAuth || cfg.UsesPostgres() {
		t.Fatalf("forward auth on Redis alone: %+v %v", cfg.Gateway, err)
	}
}

// TestForwardAuthSession: in pass mode session the first protected
// question opens the session (its one cookie in the answer), and later
// ones hold its slot with the same pass id; the visitor's short visit
// setting plays no part.
func TestForwardAuthSession(t *testing.T) {
	in := systemtest.ForwardAuthInstance(t, nil)
	systemtest.SetGateway(t, in, "sale", map[string]any{"pass": "session", "sessionTtl": "1m", "visitTtl": "10s"})
	counter := systemtest.CountRedis(t, in.Env)
	check, err := passcheck.New(passcheck.Options{JWKSURL: in.Base + "/_wr/.well-known/jwks.json", Rooms: []string{"sale"}})
	if err != nil {
		t.Fatal(err)
	}
	c := systemtest.Visitor(t)
	admitted(t, in, c, "sale")
	code, h, _ := systemtest.Ask(t, in, c, true, "GET", "/checkout/")
	if code != 200 || len(h.Values("Set-Cookie")) != 1 || !strings.HasPrefix(h.Get("Set-Cookie"), gateway.SessionCookie("sale")+"=") {
		t.Fatalf("opening the session: %d %v, want 200 with one Set-Cookie, the session's", code, h)
	}
	first, err := check.Verify(h.Get("Waitingroom-Pass"))
	if err != nil || first.Mode != pass.ModeSession {
		t.Fatalf("the session's pass: %+v %v", first, err)
	}
	before := counter.Snapshot()
	for range 3 {
		code, h, _ := systemtest.Ask(t, in, c, true, "POST", "/api/orders")
		p, err := check.Verify(h.Get("Waitingroom-Pass"))
		if code != 200 || err != nil || p.PassID != first.PassID {
			t.Fatalf("a request of the session: %d %v %v", code, err, h)
		}
	}
	if n := counter.Since(before)["pass"]; n != 3 {
		t.Fatalf("three requests of a session ran %d pass scripts, want 3 (a hold each)", n)
	}
}

// TestForwardAuthHeadAndSubpaths: a question about a HEAD is answered
// with its body (the proxy asked with GET and reads it), and a question
// asked below /_wr/auth (a proxy that appends the request's path) is
// judged from the headers alike.
func TestForwardAuthHeadAndSubpaths(t *testing.T) {
	in := systemtest.ForwardAuthInstance(t, nil)
	c := systemtest.Visitor(t)
	code, _, m := systemtest.Ask(t, in, c, false, "HEAD", "/checkout/x")
	if code != 403 || m["error"] != "pass_required" {
		t.Fatalf("HEAD /checkout/x: %d %v, want 403 pass_required with its body", code, m)
	}
	code, _, m = systemtest.Call(t, c, "GET", in.Base+gateway.AuthPath+"/checkout/x", "", "X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/checkout/x")
	if code != 403 || m["error"] != "pass_required" {
		t.Fatalf("asked at %s/checkout/x: %d %v, want 403 pass_required", gateway.AuthPath, code, m)
	}
	code, _, m = systemtest.Call(t, c, "GET", in.Base+gateway.AuthPath+"x", "", "X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/public")
	if code != 404 {
		t.Fatalf("%sx is no question: %d %v, want 404", gateway.AuthPath, code, m)
	}
}

// TestForwardAuthForgedCookiesCostNothing: a flood of questions carrying
// forged entry, visit and queue cookies is refused without one pass
// script, while an admitted visitor's visit keeps passing.
func TestForwardAuthForgedCookiesCostNothing(t *testing.T) {
	in := systemtest.ForwardAuthInstance(t, nil)
	counter := systemtest.CountRedis(t, in.Env)
	c := systemtest.Visitor(t)
	admitted(t, in, c, "sale")
	if code, _, _ := systemtest.Ask(t, in, c, false, "GET", "/checkout/"); code != 200 {
		t.Fatalf("opening the visit: %d", code)
	}
	forger := systemtest.Visitor(t)
	forged := "wr_entry_sale=AAAA; wr_visit_sale=eyJhbGciOiJIUzI1NiJ9.e30.x; wr_queue_sale=eyJhbGciOiJIUzI1NiJ9.e30.y"
	before := counter.Snapshot()
	for i := range 300 {
		if code, _, m := systemtest.Ask(t, in, forger, false, "POST", "/api/orders", "Cookie", forged); code != 403 || m["error"] != "pass_required" {
			t.Fatalf("forged question %d: %d %v, want 403 pass_required", i, code, m)
		}
		if i%50 == 0 {
			if code, _, _ := systemtest.Ask(t, in, c, false, "POST", "/api/orders"); code != 200 {
				t.Fatalf("the admitted visitor among the flood: %d, want 200", code)
			}
		}
	}
	if n := counter.Since(before)["pass"]; n != 0 {
		t.Fatalf("forged cookies ran %d pass scripts, want 0", n)
	}
}
