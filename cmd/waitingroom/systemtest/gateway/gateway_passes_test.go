package gateway

import (
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/gateway"
	"waitingroom/server/pass/passcheck"
)

// visitorFrom is a visitor whose connections come from the loopback
// address ip (127.0.0.0/8 is all loopback), with the cookies of like, if
// any: one browser's cookies used from another address.
func visitorFrom(t testing.TB, base, ip string, like *http.Client) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 8}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Jar: jar, Timeout: 20 * time.Second, Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if like != nil {
		u, _ := url.Parse(base)
		jar.SetCookies(u, like.Jar.Cookies(u))
	}
	return c
}

// cookieOf is c's cookie name for base ("" when it has none).
func cookieOf(c *http.Client, base, name string) string {
	u, _ := url.Parse(base)
	for _, k := range c.Jar.Cookies(u) {
		if k.Name == name {
			return k.Value
		}
	}
	return ""
}

// passOf verifies the pass the origin last received and returns its claims.
func passOf(t *testing.T, o *systemtest.Origin) *passcheck.Claims {
	t.Helper()
	r := o.Last.Load()
	if r == nil {
		t.Fatal("the origin received nothing")
	}
	c, err := o.Check.Verify(r.Header.Get(passcheck.HeaderName))
	if err != nil {
		t.Fatalf("the origin's last pass: %v", err)
	}
	return c
}

// readyStatus is c's READY status in room sale (polled until the poll's
// pace allows an answer).
func readyStatus(t *testing.T, in *systemtest.Instance, c *http.Client) map[string]any {
	t.Helper()
	var m map[string]any
	systemtest.WaitFor(t, "a READY status", func() bool {
		_, _, m = systemtest.Call(t, c, "GET", in.Base+"/_wr/api/v1/rooms/sale/position", "")
		return m["status"] == "READY"
	})
	return m
}

// TestGatewayOncePassRestoredAtMost: a once pass survives
// gateway.MaxRestores failures of the origin (a 500, a 504) and no more;
// every attempt carries the same pass id, so the origin can refuse a
// second order; a restore does not move the entry window.
func TestGatewayOncePassRestoredAtMost(t *testing.T) {
	systemtest.LongScenario(t)
	o := systemtest.StartOrigin(t)
	in := systemtest.GatewayInstance(t, o, nil)
	c := systemtest.Visitor(t)
	admitted(t, in, c, "sale")
	before := readyStatus(t, in, c)
	var ids []string
	for i, path := range []string{"/checkout/fail", "/checkout/slow", "/checkout/fail"} {
		code, _, m := systemtest.Call(t, c, "GET", in.Base+path, "")
		if want := map[string]int{"/checkout/fail": 500, "/checkout/slow": 504}[path]; code != want {
			t.Fatalf("attempt %d %s: %d %v, want %d", i, path, code, m, want)
		}
		ids = append(ids, passOf(t, o).PassID)
		if i < gateway.MaxRestores {
			if m := readyStatus(t, in, c); m["entryExpiresAt"] != before["entryExpiresAt"] {
				t.Fatalf("after failure %d: %v, want the window unmoved (%v)", i, m, before["entryExpiresAt"])
			}
		}
	}
	if ids[0] == "" || ids[1] != ids[0] || ids[2] != ids[0] {
		t.Fatalf("pass ids of the attempts: %q, want one id", ids)
	}
	seen := o.Requests.Load()
	if code, _, m := systemtest.Call(t, c, "GET", in.Base+"/checkout/cart", ""); code != 403 || m["error"] != "pass_required" {
		t.Fatalf("after %d failures: %d %v, want 403 pass_required (the pass is spent)", gateway.MaxRestores+1, code, m)
	}
	if o.Requests.Load() != seen {
		t.Fatal("the origin saw a request after the pass was spent")
	}
	// The slot is free again: the room counts nobody active.
	systemtest.WaitFor(t, "the slot released", func() bool { return in.AdminRoom("sale").Num("active") == 0 })
}

// TestGatewayClearsTheSpentEntryCookie: the response that spends the
// entry cookie deletes it, and it and every later answer that went with a
// pass are kept out of shared caches even when the origin marks them
// public.
func TestGatewayClearsTheSpentEntryCookie(t *testing.T) {
	// The origin of StartOrigin, marking every answer cacheable by all.
	o := &systemtest.Origin{}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=600, s-maxage=3600")
		w.Header().Set("CDN-Cache-Control", "max-age=3600")
		o.Serve(w, r)
	}))
	t.Cleanup(o.Server.Close)
	in := systemtest.GatewayInstance(t, o, nil)
	c := systemtest.Visitor(t)
	admitted(t, in, c, "sale")
	if cookieOf(c, in.Base, gateway.EntryCookie("sale")) == "" {
		t.Fatal("no entry cookie at READY")
	}
	code, h, _ := systemtest.Call(t, c, "GET", in.Base+"/checkout/cart", "")
	if code != 200 {
		t.Fatalf("with the pass: %d", code)
	}
	if got := cookieOf(c, in.Base, gateway.EntryCookie("sale")); got != "" {
		t.Fatalf("entry cookie still held after it was spent (Set-Cookie %q)", h.Values("Set-Cookie"))
	}
	if cc := h.Get("Cache-Control"); cc != "private, max-age=600" || h.Get("Cdn-Cache-Control") != "" {
		t.Fatalf("Cache-Control %q, CDN-Cache-Control %q: want private, max-age=600 and none", cc, h.Get("Cdn-Cache-Control"))
	}
	// A later answer of the visit sets no cookie, and went with a pass: as
	// private.
	if code, h, _ := systemtest.Call(t, c, "GET", in.Base+"/checkout/cart", ""); code != 200 || h.Get("Cache-Control") != "private, max-age=600" {
		t.Fatalf("an answer of the visit: %d, Cache-Control %q; want private, max-age=600", code, h.Get("Cache-Control"))
	}
	// A response with no cookie of the gateway's keeps the origin's caching.
	if _, h, _ := systemtest.Call(t, c, "GET", in.Base+"/api/items", ""); h.Get("Cache-Control") != "public, max-age=600, s-maxage=3600" {
		t.Fatalf("unprotected response's Cache-Control: %q", h.Get("Cache-Control"))
	}
}

// sessionRoom is a gateway in front of o with room sale in pass mode
// session under settings (merged into the mode's).
func sessionRoom(t *testing.T, o *systemtest.Origin, settings map[string]any) *systemtest.Instance {
	t.Helper()
	in := systemtest.GatewayInstance(t, o, nil)
	s := map[string]any{"pass": "session", "sessionTtl": "1m", "sessionMaxTtl": 3600}
	for k, v := range settings {
		s[k] = v
	}
	systemtest.SetGateway(t, in, "sale", s)
	return in
}

// TestGatewaySessionSharedFromManyAddresses: one session cookie used from
// eight addresses at once gets no more than its burst through (then 429
// rate_limited in the contract's form), and another visitor's session is
// unaffected.
func TestGatewaySessionSharedFromManyAddresses(t *testing.T) {
	const burst = 5
	o := systemtest.StartOrigin(t)
	// 0.01 a second: no request beyond the burst comes due within the test.
	in := sessionRoom(t, o, map[string]any{"sessionRate": 0.01, "sessionBurst": burst})
	a, b := systemtest.Visitor(t), systemtest.Visitor(t)
	admitted(t, in, a, "sale")
	admitted(t, in, b, "sale")
	if code, _, _ := systemtest.Call(t, a, "GET", in.Base+"/checkout/open", ""); code != 200 {
		t.Fatalf("opening a's session: %d", code)
	}
	var ok, limited, other atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		c := visitorFrom(t, in.Base, fmt.Sprintf("127.0.%d.%d", i, i+2), a)
		wg.Go(func() {
			for range 20 {
				code, h, m := systemtest.Call(t, c, "GET", in.Base+"/checkout/step", "")
				switch {
				case code == 200:
					ok.Add(1)
				case code == 429 && m["error"] == "rate_limited" && m["message"] != "" && h.Get("Retry-After") != "":
					limited.Add(1)
				default:
					other.Add(1)
					t.Errorf("shared cookie: %d %v", code, m)
				}
			}
		})
	}
	wg.Wait()
	// The session opened with one request; burst more may come at once.
	if ok.Load() > burst || limited.Load() < 160-burst || other.Load() != 0 {
		t.Fatalf("160 requests with one cookie from 8 addresses: %d forwarded, %d limited, %d other; want at most %d forwarded",
			ok.Load(), limited.Load(), other.Load(), burst)
	}
	for i := range burst + 1 { // its opening, then its burst
		if code, _, m := systemtest.Call(t, b, "GET", in.Base+"/checkout/step", ""); code != 200 {
			t.Fatalf("another visitor's request %d: %d %v", i, code, m)
		}
	}
}

// TestGatewaySessionInFlight: a session's requests in flight at once are
// capped; the next one is refused while they last, another session's are
// not.
func TestGatewaySessionInFlight(t *testing.T) {
	systemtest.LongScenario(t)
	o := systemtest.StartOrigin(t)
	in := sessionRoom(t, o, map[string]any{"sessionInFlight": 1})
	a, b := systemtest.Visitor(t), systemtest.Visitor(t)
	admitted(t, in, a, "sale")
	admitted(t, in, b, "sale")
	for _, c := range []*http.Client{a, b} {
		if code, _, _ := systemtest.Call(t, c, "GET", in.Base+"/checkout/open", ""); code != 200 {
			t.Fatalf("opening a session: %d", code)
		}
	}
	slow := make(chan int, 1)
	seen := o.Requests.Load()
	go func() { code, _, _ := systemtest.Call(t, a, "GET", in.Base+"/checkout/slow", ""); slow <- code }()
	systemtest.WaitFor(t, "the slow request at the origin", func() bool { return o.Requests.Load() > seen })
	if code, h, m := systemtest.Call(t, a, "GET", in.Base+"/checkout/step", ""); code != 429 || m["error"] != "rate_limited" || h.Get("Retry-After") == "" {
		t.Fatalf("a second request in flight: %d %v, want 429 rate_limited", code, m)
	}
	if code, _, m := systemtest.Call(t, b, "GET", in.Base+"/checkout/step", ""); code != 200 {
		t.Fatalf("another session meanwhile: %d %v", code, m)
	}
	if code := <-slow; code != 504 {
		t.Fatalf("the slow request: %d, want 504", code)
	}
	if code, _, m := systemtest.Call(t, a, "GET", in.Base+"/checkout/step", ""); code != 200 {
		t.Fatalf("after the slow request: %d %v", code, m)
	}
}

// TestGatewaySessionBoundToItsNetwork: with sessionNetwork, the cookie
// from another /24 is no pass there, while its owner's network keeps it.
func TestGatewaySessionBoundToItsNetwork(t *testing.T) {
	o := systemtest.StartOrigin(t)
	in := sessionRoom(t, o, map[string]any{"sessionNetwork": true})
	a := systemtest.Visitor(t)
	admitted(t, in, a, "sale")
	if code, _, _ := systemtest.Call(t, a, "GET", in.Base+"/checkout/open", ""); code != 200 {
		t.Fatalf("opening the session: %d", code)
	}
	far := visitorFrom(t, in.Base, "127.0.9.1", a)
	if code, _, m := systemtest.Call(t, far, "GET", in.Base+"/checkout/step", ""); code != 403 || m["error"] != "pass_required" {
		t.Fatalf("from another /24: %d %v, want 403 pass_required", code, m)
	}
	near := visitorFrom(t, in.Base, "127.0.0.77", a)
	for _, c := range []*http.Client{a, near} {
		if code, _, m := systemtest.Call(t, c, "GET", in.Base+"/checkout/step", ""); code != 200 {
			t.Fatalf("from the session's /24: %d %v", code, m)
		}
	}
}

// TestGatewaySessionEndsWithLeave: leaving ends the session: its cookie
// is no pass any more, and its slot is free.
func TestGatewaySessionEndsWithLeave(t *testing.T) {
	o := systemtest.StartOrigin(t)
	in := sessionRoom(t, o, nil)
	a := systemtest.Visitor(t)
	admitted(t, in, a, "sale")
	if code, _, _ := systemtest.Call(t, a, "GET", in.Base+"/checkout/open", ""); code != 200 {
		t.Fatalf("opening the session: %d", code)
	}
	kept := visitorFrom(t, in.Base, "127.0.0.1", a) // the cookies as they were
	if code, _, _ := systemtest.Call(t, a, "POST", in.Base+"/_wr/api/v1/rooms/sale/leave", ""); code != 204 {
		t.Fatalf("leave: %d", code)
	}
	if code, _, m := systemtest.Call(t, kept, "GET", in.Base+"/checkout/step", ""); code != 403 || m["error"] != "pass_required" {
		t.Fatalf("the session cookie after leave: %d %v, want 403 pass_required", code, m)
	}
	if cookieOf(kept, in.Base, gateway.SessionCookie("sale")) != "" {
		t.Fatal("the ended session's cookie was not cleared")
	}
	systemtest.WaitFor(t, "the slot freed", func() bool { return in.AdminRoom("sale").Num("active") == 0 })
}

// TestGatewayOldSessionAfterReadmission: admitted again, the visitor's new
// session replaces the old one: the old cookie is refused.
func TestGatewayOldSessionAfterReadmission(t *testing.T) {
	o := systemtest.StartOrigin(t)
	in := sessionRoom(t, o, nil)
	a := systemtest.Visitor(t)
	admitted(t, in, a, "sale")
	if code, _, _ := systemtest.Call(t, a, "GET", in.Base+"/checkout/open", ""); code != 200 {
		t.Fatalf("opening the session: %d", code)
	}
	old := visitorFrom(t, in.Base, "127.0.0.1", a)
	first := passOf(t, o).PassID
	admitted(t, in, a, "sale") // enters again while the session lasts
	if code, _, _ := systemtest.Call(t, a, "GET", in.Base+"/checkout/again", ""); code != 200 || passOf(t, o).PassID == first {
		t.Fatalf("after re-admission: %d, pass %q (first %q): want a new session", code, passOf(t, o).PassID, first)
	}
	if code, _, m := systemtest.Call(t, old, "GET", in.Base+"/checkout/step", ""); code != 403 {
		t.Fatalf("the old session's cookie: %d %v, want 403", code, m)
	}
	if code, _, m := systemtest.Call(t, a, "GET", in.Base+"/checkout/step", ""); code != 200 || !strings.HasSuffix(m["subject"].(string), "/session") {
		t.Fatalf("the new session: %d %v", code, m)
	}
}

// TestGatewayOneVisitorCannotSteerAdmission: one admitted visitor whose
// requests all fail does not move an adaptive room's limit, however many
// it makes; failures seen by several visitors do.
func TestGatewayOneVisitorCannotSteerAdmission(t *testing.T) {
	systemtest.LongScenario(t)
	const window = 300 * time.Millisecond
	o := systemtest.StartOrigin(t)
	// The p90 ceiling out of reach: the errors are what is tested, and on
	// a loaded machine the healthy requests' p90 alone passed 2 s.
	in := systemtest.GatewayInstance(t, o, map[string]string{"WR_ADAPTIVE_WINDOW": window.String(), "WR_ADAPTIVE_MIN_SAMPLES": "3",
		"WR_TARGET_ACTIVE": "40", "WR_ADAPTIVE_P90_CEILING": "10m"})
	systemtest.SetGateway(t, in, "sale", map[string]any{"pass": "session", "sessionRate": 1000, "sessionBurst": 10000})
	cs := make([]*http.Client, 6) // cs[0] makes its requests fail
	for i := range cs {
		cs[i] = systemtest.Visitor(t)
		admitted(t, in, cs[i], "sale")
	}
	if r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/sale", systemtest.TestAdminToken, map[string]any{"mode": "adaptive"}); r.Status != 200 {
		t.Fatalf("adaptive mode: %d %s", r.Status, r.Raw)
	}
	var failing atomic.Int64 // visitors cs[0..failing) fail
	failing.Store(1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	t.Cleanup(func() { close(stop) })
	for i, c := range cs {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				path, n := "/checkout/cart", 1
				if int64(i) < failing.Load() {
					path, n = "/checkout/fail", 10
				}
				for range n {
					systemtest.Call(t, c, "GET", in.Base+path, "")
				}
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
	}
	changed := func() bool { return strings.Contains(in.Logs.String(), `msg="admission limit changed" room=sale`) }
	// The healthy visitors' samples reach the signals; several windows
	// pass with the failing visitor hammering.
	systemtest.WaitFor(t, "healthy samples in the signals", func() bool {
		sig, _ := in.AdminRoom("sale").Body["signals"].(map[string]any)
		return sig["orders"].(float64) >= 3
	})
	from := time.Now().UnixMilli() / window.Milliseconds()
	systemtest.WaitFor(t, "eight windows", func() bool { return time.Now().UnixMilli()/window.Milliseconds() > from+8 })
	if r := in.AdminRoom("sale"); changed() || r.Num("targetActive") != 40 {
		t.Fatalf("one failing visitor moved the limit: targetActive %d, last change %v", r.Num("targetActive"), r.Body["lastChange"])
	}
	// Four visitors failing: the origin is failing.
	failing.Store(4)
	systemtest.WaitFor(t, "the limit cut for errors", func() bool {
		r := in.AdminRoom("sale")
		lc, _ := r.Body["lastChange"].(map[string]any)
		return r.Num("targetActive") < 40 && lc["reason"] == "errors"
	})
}
