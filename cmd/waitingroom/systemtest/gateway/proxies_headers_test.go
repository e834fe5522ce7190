package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/gateway"
)

// forgedHeaders are what a client sends to pass without queueing or to
// make the origin's framework route another method or path than the one
// judged: a pass of its own in three spellings, the method and path
// overrides in both spellings, and the decision headers of both
// conventions. Each name is sent exactly as written here.
var forgedHeaders = []string{
	"Waitingroom-Pass", "forged-1",
	"Waitingroom_Pass", "forged-2",
	"waitingroom-pass", "forged-3",
	"X-HTTP-Method-Override", "DELETE",
	"X-HTTP-Method", "DELETE",
	"X-Method-Override", "DELETE",
	"X-Original-URL", "/checkout/x",
	"X-Rewrite-URL", "/checkout/x",
	"X_HTTP_Method_Override", "DELETE",
	"x_original_url", "/checkout/x",
	"X-Original-URI", "/public",
	"X-Original-Method", "POST",
	"X-Forwarded-Uri", "/public",
	"X-Forwarded-Method", "POST",
}

// TestProxiesDropForgedHeaders: through each proxy, none of
// forgedHeaders reaches the origin, on an unprotected path and on a
// protected one (where the only Waitingroom-Pass the origin gets is the
// waiting room's, and it verifies); and without a pass they change
// nothing: the protected request is still refused.
func TestProxiesDropForgedHeaders(t *testing.T) {
	forwardAuthSites(t, func(t *testing.T, s *proxiedSite) {
		c := s.visitor()
		// Not admitted: refused whatever the headers say.
		if res, body := s.send(c, "GET", "/checkout/x", "", forgedHeaders...); res.StatusCode != 403 || !strings.Contains(body, `"pass_required"`) {
			t.Errorf("%s: GET /checkout/x with forged headers, not admitted: %d %q, want 403 pass_required", s.proxy, res.StatusCode, body)
		}
		if hs := s.log(); len(hs) != 0 {
			t.Fatalf("%s: the origin got %+v, want nothing", s.proxy, hs)
		}
		if res, _ := s.send(c, "GET", "/public", "", forgedHeaders...); res.StatusCode != 200 {
			t.Fatalf("%s: GET /public with forged headers: %d, want 200", s.proxy, res.StatusCode)
		}
		if h := s.lastHit(); h.Handler != "public" || h.Pass || len(h.Suspect) != 0 {
			t.Errorf("%s: the origin got %+v for /public, want no pass and none of the forged headers", s.proxy, h)
		}
		s.admit(c)
		for _, path := range []string{"/checkout/x", "/checkout/x"} { // the entry token, then the visit
			if res, body := s.send(c, "GET", path, "", forgedHeaders...); res.StatusCode != 200 {
				t.Fatalf("%s: GET %s admitted, with forged headers: %d %q", s.proxy, path, res.StatusCode, body)
			}
			h := s.lastHit()
			s.verify(h)
			if h.Handler != "checkout" || len(h.Suspect) != 1 || h.Suspect[0] != "Waitingroom-Pass: "+h.PassValue {
				t.Errorf("%s: the origin got %+v, want the waiting room's pass alone", s.proxy, h)
			}
		}
	})
}

// TestProxiesIgnoreForgedDecisionHeaders: a client's own decision headers
// (the original method or URI a proxy tells /_wr/auth, in either
// convention) are not what /_wr/auth judges: GET /checkout/x claiming to
// be GET /public or POST still needs a pass, and the answer is the
// refusal, not the 400 of a question naming both conventions.
func TestProxiesIgnoreForgedDecisionHeaders(t *testing.T) {
	forwardAuthSites(t, func(t *testing.T, s *proxiedSite) {
		c := s.visitor()
		for _, forged := range [][]string{
			{"X-Original-URI", "/public"},
			{"X-Original-Method", "POST"},
			{"X-Original-URI", "/public", "X-Original-Method", "POST"},
			{"X-Forwarded-Uri", "/public"},
			{"X-Forwarded-Method", "POST"},
			{"X-Forwarded-Uri", "/public", "X-Forwarded-Method", "POST", "X-Forwarded-Host", "elsewhere.example"},
			{"x-original-uri", "/public", "x-forwarded-uri", "/public"},
		} {
			res, body := s.send(c, "GET", "/checkout/x", "", append([]string{"Accept", "application/json"}, forged...)...)
			var m map[string]any
			if err := json.Unmarshal([]byte(body), &m); err != nil || res.StatusCode != 403 || m["error"] != "pass_required" {
				t.Errorf("%s: GET /checkout/x with %v: %d %q, want 403 pass_required", s.proxy, forged, res.StatusCode, body)
			}
		}
		if hs := s.log(); len(hs) != 0 {
			t.Errorf("%s: the origin got %+v, want nothing", s.proxy, hs)
		}
	})
}

// TestProxiesAuthIsTheProxys: /_wr/auth answers the trusted proxies
// alone. Asked by a visitor directly (from visitorIP, not in
// WR_TRUSTED_PROXIES) it is 403 untrusted_proxy, however the question is
// put, while the same question from 127.0.0.1 is answered; asked through
// either proxy, in any spelling the waiting room would route there, the
// proxy refuses it with 404 before the waiting room sees it.
func TestProxiesAuthIsTheProxys(t *testing.T) {
	originBase, hits := startExpress(t)
	in := systemtest.NewRedisOnlyEnv(t).Start(forwardAuthVars())
	direct := visitorFrom(t, in.Base, visitorIP, nil)
	for _, q := range [][]string{
		{"X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/public"},
		{"X-Original-Method", "GET", "X-Original-URI", "/public"},
		{"X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/checkout/x", "Accept", "text/html"},
	} {
		code, h, m := systemtest.Call(t, direct, "GET", in.Base+gateway.AuthPath, "", q...)
		if code != 403 || m["error"] != "untrusted_proxy" || h.Get("Waitingroom-Pass") != "" {
			t.Errorf("a visitor asking %v directly: %d %v, want 403 untrusted_proxy", q, code, m)
		}
	}
	trusted := visitorFrom(t, in.Base, "127.0.0.1", nil)
	if code, _, m := systemtest.Call(t, trusted, "GET", in.Base+gateway.AuthPath, "", "X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/public"); code != 200 {
		t.Fatalf("the same question from 127.0.0.1: %d %v, want 200", code, m)
	}
	eachProxy(t, in, originBase, hits, func(t *testing.T, s *proxiedSite) {
		c := s.visitor()
		for _, path := range []string{"/_wr/auth", "/_wr/auth/", "/_WR/Auth", "/_wr//auth", "/_wr/./auth", "/_wr/%61uth"} {
			res, body := s.send(c, "GET", path, "", "X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/checkout/x",
				"X-Original-Method", "GET", "X-Original-URI", "/checkout/x")
			var m map[string]any
			_ = json.Unmarshal([]byte(body), &m)
			if res.StatusCode != 404 || m["error"] != "not_found" || res.Header.Get("Waitingroom-Pass") != "" {
				t.Errorf("%s: GET %s through the proxy: %d %q, want 404 not_found", s.proxy, path, res.StatusCode, body)
			}
		}
		if hs := s.log(); len(hs) != 0 {
			t.Errorf("%s: the origin got %+v, want nothing", s.proxy, hs)
		}
	})
}
