package forwardauth

import (
	"path/filepath"
	"strings"
	"testing"

	"waitingroom/loadtest/internal/scenario"
	"waitingroom/loadtest/internal/smoke"
	"waitingroom/queue/queuetest"
)

// TestSmokeForwardAuth runs the forward-auth scenario for a second a
// phase: the built command in forward-auth mode and in gateway mode on a
// Redis of its own, nginx as the origin and the proxy. It asserts counts and that every
// figure was measured, never a speed.
func TestSmokeForwardAuth(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no extra processes")
	}
	if _, _, err := findNginx(""); err != nil {
		t.Fatalf("the forward-auth smoke run needs nginx: %v", err)
	}
	bin := smoke.Command(t)
	redisURL := queuetest.Server(t)
	dir := t.TempDir()
	var o scenario.Options
	rep, err := Run(t.Context(), &o, []string{"--server-bin", bin, "--redis", redisURL, "--redis-db", "0",
		"--conns", "8", "--visitors", "4", "--warmup", "200ms", "--duration", "1s", "--timeout", "60s",
		"--out", filepath.Join(dir, "r.json"), "--html", filepath.Join(dir, "r.html")})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.(*faReport)
	smoke.LogOnFailure(t, r)
	if r.Interrupted {
		t.Fatal("interrupted")
	}
	for _, c := range r.Checks {
		if !c.OK {
			t.Errorf("check %q failed: %s", c.Name, c.Got)
		}
	}
	for _, p := range r.phases() {
		if p == nil {
			t.Fatal("a phase is missing")
		}
		if p.RPS <= 0 || p.Latency.P50 <= 0 || p.Seconds <= 0 {
			t.Errorf("%s: %.0f req/s, p50 %v over %.1f s: want figures", p.Name, p.RPS, p.Latency.P50, p.Seconds)
		}
		if _, ok := p.CPUMicros[procServer]; !ok || p.CPUMicros[procTool] <= 0 || p.MachineMicros <= 0 {
			t.Errorf("%s: CPU per request %v, machine %.1f µs: want each process's", p.Name, p.CPUMicros, p.MachineMicros)
		}
	}
	if r.OpenRatio <= 0 || r.VisitRatio <= 0 || r.GatewayOpenRatio <= 0 || r.GatewayVisitRatio <= 0 {
		t.Errorf("ratios to nginx → origin: auth_request unprotected %v, protected %v; gateway unprotected %v, protected %v; want all > 0",
			r.OpenRatio, r.VisitRatio, r.GatewayOpenRatio, r.GatewayVisitRatio)
	}
	for _, p := range []*phase{r.GatewayOpen, r.GatewayVisit} {
		if p.CPUMicros[procGateway] <= 0 {
			t.Errorf("%s: the gateway's CPU per request %v, want > 0", p.Name, p.CPUMicros[procGateway])
		}
	}
	// The waiting room's CPU is read in ticks of 10 ms: a second of
	// decisions holds several.
	if r.DecideOpen.CPUMicros[procServer] <= 0 || r.DecideVisit.CPUMicros[procServer] <= 0 {
		t.Errorf("waiting room CPU per decision: %v / %v µs, want > 0", r.DecideOpen.CPUMicros[procServer], r.DecideVisit.CPUMicros[procServer])
	}
	if html := smoke.WriteReports(t, &o, rep); !strings.Contains(html, "gateway: protected, visit") {
		t.Error("the HTML report lacks the phases")
	}
}
