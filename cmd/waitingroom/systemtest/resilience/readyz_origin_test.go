package resilience

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/pass"
)

// TestGatewayOriginSaidAtStart: a WR_UPSTREAM nothing listens on is a
// warning at start naming the variable and the address tried, and
// /readyz's origin check says "unreachable" while the instance stays
// ready (200: it still queues visitors).
func TestGatewayOriginSaidAtStart(t *testing.T) {
	addr := systemtest.FreePort(t) // reserved: nothing listens there
	in := systemtest.NewRedisOnlyEnv(t).Start(map[string]string{"WR_UPSTREAM": "http://" + addr, "WR_PROTECT": "GET /checkout/*=sale",
		"WR_PASS_KEY": pass.GenerateKey(), "WR_ROOMS": "sale"})
	if line := in.LogLine("WARN", "WR_UPSTREAM", addr); line == "" {
		t.Errorf("no warning naming WR_UPSTREAM and %s at start; log:\n%s", addr, in.Logs.String())
	}
	if line := in.LogLine("redis: connected"); line == "" {
		t.Errorf("no redis: connected line at start")
	}
	r := systemtest.Do(t, "GET", in.Admin+"/readyz", "", nil)
	if r.Status != 200 || !strings.HasPrefix(systemtest.ReadyzCheck(r, "origin"), "unreachable") {
		t.Fatalf("readyz with the origin down = %d %s, want 200 with origin unreachable", r.Status, r.Raw)
	}
}

// TestGatewayOriginCheck: /readyz's origin check follows the origin's
// last answer: ok while it answers below 500, "errors" after a 5xx, ok
// again; readiness never fails on it.
func TestGatewayOriginCheck(t *testing.T) {
	var fail atomic.Bool
	o := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(o.Close)
	in := systemtest.NewRedisOnlyEnv(t).Start(map[string]string{"WR_UPSTREAM": o.URL, "WR_PROTECT": "GET /checkout/*=sale",
		"WR_PASS_KEY": pass.GenerateKey(), "WR_ROOMS": "sale"})
	if line := in.LogLine("origin: reachable"); line == "" {
		t.Errorf("no origin: reachable line at start")
	}
	check := func(want string) {
		t.Helper()
		r := systemtest.Do(t, "GET", in.Admin+"/readyz", "", nil)
		if r.Status != 200 || !strings.HasPrefix(systemtest.ReadyzCheck(r, "origin"), want) {
			t.Fatalf("readyz = %d %s, want 200 with origin %s", r.Status, r.Raw, want)
		}
	}
	check("ok")
	fail.Store(true)
	if res, err := http.Get(in.Base + "/public"); err != nil || res.StatusCode != 500 {
		t.Fatalf("through the gateway: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	check("errors")
	fail.Store(false)
	if res, err := http.Get(in.Base + "/public"); err != nil || res.StatusCode != 200 {
		t.Fatalf("through the gateway: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	check("ok")
}
