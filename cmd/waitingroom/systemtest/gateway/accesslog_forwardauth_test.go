package gateway

import (
	"strings"
	"testing"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/gateway"
)

// TestForwardAuthAccessLog: a question's access line names what was
// judged — the original method, the covering route's pattern (never the
// raw path or query), the room and the decision — beside the question's
// own method and status.
func TestForwardAuthAccessLog(t *testing.T) {
	in := systemtest.ForwardAuthInstance(t, map[string]string{"WR_LOG_FORMAT": "json", "WR_ACCESS_LOG": "all"})
	c := systemtest.Visitor(t)
	lineOf := func(method, uri string, nginx bool) map[string]any {
		t.Helper()
		_, h, _ := systemtest.Ask(t, in, c, nginx, method, uri)
		l := systemtest.AccessLine(t, in, h.Get("X-Request-Id"))
		if l == nil {
			t.Fatalf("%s %s: no access line", method, uri)
		}
		return l
	}
	for _, tc := range []struct {
		method, uri           string
		nginx                 bool
		route, room, decision string
		status                float64
	}{
		{"POST", "/api/orders?secret-query=1", false, "/api/orders", "sale", "wait", 403},
		{"POST", "/api/orders", true, "/api/orders", "sale", "wait", 403},
		{"GET", "/checkout/x", true, "/checkout/*", "sale", "wait", 403}, // 403 pass_required (no page navigation)
		{"GET", "/products/secret-path", false, "", "", "unprotected", 200},
		{"GET", "/checkout/..", false, "", "", "refused", 400},
	} {
		l := lineOf(tc.method, tc.uri, tc.nginx)
		if l["route"] != gateway.AuthPath || l["method"] != "GET" || l["judged_method"] != tc.method ||
			l["judged_route"] != tc.route || l["room"] != tc.room || l["decision"] != tc.decision || l["status"] != tc.status {
			t.Errorf("%s %s (nginx %v): line %v; want route %s, method GET, judged %s %q in %q, decision %s, status %v",
				tc.method, tc.uri, tc.nginx, l, gateway.AuthPath, tc.method, tc.route, tc.room, tc.decision, tc.status)
		}
	}
	admitted(t, in, c, "sale")
	if l := lineOf("GET", "/checkout/x", false); l["decision"] != "pass" || l["status"] != 200.0 || l["judged_route"] != "/checkout/*" {
		t.Errorf("an admitted GET /checkout/x: line %v, want decision pass, status 200", l)
	}
	for _, leak := range []string{"secret-query", "secret-path"} {
		if strings.Contains(in.Logs.String(), leak) {
			t.Errorf("the log holds %q", leak)
		}
	}
}
