package gateway

// GET /admin/stats' "shop": the origin as the gateway sees it (its
// answers by class, latency, failures, refusals) in gateway mode, the
// decisions in forward auth, null otherwise. Each answer is checked
// against the management port's OpenAPI description.

import (
	"strings"
	"testing"

	"waitingroom/cmd/waitingroom/systemtest"
)

// shopStats is GET /admin/stats' shop object, checked against the
// description (nil when the answer has none).
func shopStats(t *testing.T, s *systemtest.Spec, in *systemtest.Instance) map[string]any {
	t.Helper()
	a := s.Call("GET", in.Admin+"/admin/stats", systemtest.TestAdminToken, nil, 200)
	shop, _ := a.Body["shop"].(map[string]any)
	return shop
}

// count is m[k] as a number (-1: absent or not a number).
func count(m map[string]any, k string) float64 {
	if v, ok := m[k].(float64); ok {
		return v
	}
	return -1
}

func TestStatsShopGateway(t *testing.T) {
	o := systemtest.StartFailingOrigin(t)
	in := systemtest.ShopGateway(t, o)
	s := systemtest.LoadSpec(t, in.Admin+"/admin/openapi.json")
	shop := shopStats(t, s, in)
	if shop == nil || shop["mode"] != "gateway" || shop["originVisible"] != true || shop["origin"] != "ok" {
		t.Fatalf("shop at start = %v, want gateway mode with the origin ok", shop)
	}
	answers, _ := shop["answers"].(map[string]any)
	requests, _ := shop["requests"].(map[string]any)
	for _, c := range []string{"2xx", "3xx", "4xx", "5xx"} {
		if count(answers, c) != 0 {
			t.Errorf("answers[%s] at start = %v, want 0", c, answers[c])
		}
	}
	for _, k := range []string{"forwarded", "no_pass", "bad_gateway", "timeout"} {
		if count(requests, k) != 0 {
			t.Errorf("requests[%s] at start = %v, want 0", k, requests[k])
		}
	}

	systemtest.Through(t, in, "/public", 200)
	systemtest.Through(t, in, "/public", 200)
	systemtest.Through(t, in, "/checkout/cart", 403) // no pass
	o.Fail.Store(true)
	systemtest.Through(t, in, "/public", 500)

	shop = shopStats(t, s, in)
	answers, _ = shop["answers"].(map[string]any)
	requests, _ = shop["requests"].(map[string]any)
	if count(answers, "2xx") != 2 || count(answers, "5xx") != 1 || count(requests, "forwarded") != 3 || count(requests, "no_pass") != 1 {
		t.Errorf("after two 200s, a 500 and a refusal: answers %v, requests %v", answers, requests)
	}
	if count(shop, "passed") != 0 {
		t.Errorf("passed = %v with no pass held, want 0", shop["passed"])
	}
	if origin, _ := shop["origin"].(string); !strings.HasPrefix(origin, "errors") {
		t.Errorf("origin check after a 500 = %q, want errors: …", origin)
	}
	lat, _ := shop["latency"].(map[string]any)
	if count(lat, "count") != 3 || count(lat, "p50Seconds") <= 0 || count(lat, "p90Seconds") < count(lat, "p50Seconds") {
		t.Errorf("latency after three answers = %v, want count 3 and 0 < p50 <= p90", lat)
	}
	if b, _ := lat["buckets"].([]any); len(b) == 0 {
		t.Errorf("latency has no buckets: %v", lat)
	}

	systemtest.Through(t, in, "/cut", 502)
	shop = shopStats(t, s, in)
	requests, _ = shop["requests"].(map[string]any)
	if count(requests, "bad_gateway") != 1 {
		t.Errorf("requests after a cut connection = %v, want bad_gateway 1", requests)
	}
	if origin, _ := shop["origin"].(string); !strings.HasPrefix(origin, "errors") {
		t.Errorf("origin check after a bad gateway = %q, want errors: …", origin)
	}
}

func TestStatsShopForwardAuth(t *testing.T) {
	in := systemtest.ForwardAuthInstance(t, nil)
	s := systemtest.LoadSpec(t, in.Admin+"/admin/openapi.json")
	c := systemtest.ShopDecisions(t, in)
	if code, _, _ := systemtest.Ask(t, in, c, false, "GET", "no-slash"); code != 400 {
		t.Fatalf("a target it cannot judge = %d, want 400", code)
	}
	shop := shopStats(t, s, in)
	if shop == nil || shop["mode"] != "forwardAuth" || shop["originVisible"] != false || shop["origin"] != nil {
		t.Fatalf("shop = %v, want forward auth with the origin not visible", shop)
	}
	requests, _ := shop["requests"].(map[string]any)
	if count(shop, "passed") != 0 || count(requests, "allowed") != 1 || count(requests, "no_pass") != 1 || count(requests, "bad_request") != 1 || count(requests, "rate_limited") != 0 {
		t.Errorf("decisions = %v, want allowed 1, no_pass 1, bad_request 1, rate_limited 0", requests)
	}
	if answers, _ := shop["answers"].(map[string]any); len(answers) != 0 {
		t.Errorf("forward auth reports the origin's answers: %v", answers)
	}
}

// TestStatsShopNone: outside gateway modes the shop is null.
func TestStatsShopNone(t *testing.T) {
	in := systemtest.NewEnv(t).Start(nil)
	s := systemtest.LoadSpec(t, in.Admin+"/admin/openapi.json")
	a := s.Call("GET", in.Admin+"/admin/stats", systemtest.TestAdminToken, nil, 200)
	if v, ok := a.Body["shop"]; !ok || v != nil {
		t.Errorf("shop of an ordinary instance = %v (present %v), want null", v, ok)
	}
}
