package gateway

// Tests of the lows of failing closed: every answer that went with a pass
// or carries a waiting-room cookie is kept out of shared caches, through
// the gateway and both forward-auth templates; and one visit cookie cannot
// serve a crowd in forward auth (gateway.DecisionHold).

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"waitingroom/cmd/waitingroom/systemtest"
)

// TestProxiesPassAnswersArePrivate: behind nginx and Caddy, in front of an
// origin that marks every answer cacheable by all, the answer that opens a
// visit and every later answer of the visit say private, no-store; an
// unprotected answer keeps the origin's caching alone.
func TestProxiesPassAnswersArePrivate(t *testing.T) {
	in := systemtest.NewRedisOnlyEnv(t).Start(forwardAuthVars())
	o := &lenientOrigin{}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=600")
		o.serve(w, r)
	}))
	t.Cleanup(o.srv.Close)
	eachProxy(t, in, o.srv.URL, o.log, func(t *testing.T, s *proxiedSite) {
		c := s.visitor()
		s.admit(c)
		for i, what := range []string{"the answer that opens the visit", "an answer of the visit"} {
			res, body := s.send(c, "GET", "/checkout/x", "")
			cc := strings.Join(res.Header.Values("Cache-Control"), ", ")
			if res.StatusCode != 200 || !strings.Contains(cc, "no-store") || !strings.Contains(cc, "private") {
				t.Errorf("%s: %s (%d): %d %s, Cache-Control %q; want 200 with private, no-store",
					s.proxy, what, i, res.StatusCode, strings.TrimSpace(body), cc)
			}
		}
		res, _ := s.send(c, "GET", "/api/orders-list", "")
		if cc := strings.Join(res.Header.Values("Cache-Control"), ", "); res.StatusCode != 200 || cc != "public, max-age=600" {
			t.Errorf("%s: an unprotected answer: %d, Cache-Control %q; want the origin's own", s.proxy, res.StatusCode, cc)
		}
	})
}

// TestForwardAuthVisitBounded: one visit's cookie asked about by a crowd
// at once gets twice the room's sessionInFlight decisions at once and as
// many again each gateway.DecisionHold, the rest 429 with Retry-After;
// another visitor's visit is not touched while the first one's bites.
func TestForwardAuthVisitBounded(t *testing.T) {
	in := systemtest.ForwardAuthInstance(t, nil)
	// One decision a DecisionHold, two at once: a crowd that the slowest
	// machine still sends faster than that.
	systemtest.SetGateway(t, in, "sale", map[string]any{"sessionInFlight": 1})
	shared, other := systemtest.Visitor(t), systemtest.Visitor(t)
	for _, c := range []*http.Client{shared, other} {
		admitted(t, in, c, "sale")
		if code, _, m := systemtest.Ask(t, in, c, false, "GET", "/checkout/x"); code != 200 {
			t.Fatalf("the first protected request: %d %v", code, m)
		}
	}
	const crowd = 200
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		allowed int
		limited int
	)
	for range crowd {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, h, _ := systemtest.Ask(t, in, shared, false, "GET", "/checkout/x")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case code == 200:
				allowed++
			case code == 429 && h.Get("Retry-After") != "":
				limited++
			default:
				t.Errorf("a request of the shared visit: %d", code)
			}
		}()
	}
	wg.Wait()
	// The crowd takes however long it takes: each DecisionHold that passes
	// lets sessionInFlight more through, so the bound is a ceiling on what
	// the time the crowd took can have let through, not a count.
	burst := 2
	if limited == 0 || allowed < burst {
		t.Errorf("a crowd of %d on one visit: %d allowed, %d limited; want at least the burst %d allowed and the rest limited",
			crowd, allowed, limited, burst)
	}
	if code, _, m := systemtest.Ask(t, in, other, false, "GET", "/checkout/x"); code != 200 {
		t.Errorf("another visit while the shared one is limited: %d %v, want 200", code, m)
	}
}
