package main

import (
	"path/filepath"
	"strconv"
	"testing"

	"waitingroom/server/pass"
)

// TestSmokeGatewayAttack runs the gateway-attack scenario for a few
// seconds against the command in gateway mode, in front of the origin the
// scenario starts: no protected request reaches it without a pass, and
// every legitimate visitor gets through, beside every attack. Latency is
// not judged here (the load run is the place for it).
func TestSmokeGatewayAttack(t *testing.T) {
	originAddr := freeAddr(t)
	s := startSmokeServerWith(t, 1, map[string]string{
		"WR_RATE_LIMITS":    "on",
		"WR_UPSTREAM":       "http://" + originAddr,
		"WR_PROTECT":        "POST /api/orders=sale, GET /checkout/*=sale, GET /members/*=club",
		"WR_PASS_KEY":       pass.GenerateKey(),
		"WR_ROOMS":          "default,sale,club",
		"WR_POW_DIFFICULTY": "8",
		"WR_TARGET_ACTIVE":  "100",
	})
	dir := t.TempDir()
	var o options
	args := s.args("--room", "sale", "-n", "40", "--over", "2s", "--users-per-addr", "4", "--visitor-bound", "90s",
		"--origin-listen", originAddr, "--server-pid", strconv.Itoa(s.pid), "--attack-for", "2s",
		"--smuggle", "5", "--variant-rounds", "1", "--slow-readers", "3", "--download-mib", "32",
		"--bodies", "2", "--body-mib", "8", "--share-addrs", "4", "--stuffing-bare", "40", "--stuffing-solved", "40",
		"--rss-slack", "256", "--out", filepath.Join(dir, "r.json"), "--html", filepath.Join(dir, "r.html"))
	rep, err := runGatewayAttack(t.Context(), &o, args)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.(*gwReport)
	logOnFailure(t, r)
	if r.Baseline == nil || r.Attack == nil || r.Interrupted {
		t.Fatalf("runs: baseline %v, under attack %v, interrupted %v: want both, whole", r.Baseline != nil, r.Attack != nil, r.Interrupted)
	}
	for name, run := range map[string]*gwRun{"baseline": r.Baseline, "under attack": r.Attack} {
		if run.Origin.UnpassedTotal != 0 {
			t.Errorf("%s: the origin saw %d protected requests without a pass (%s), want 0", name, run.Origin.UnpassedTotal, bySender(run.Origin.Unpassed))
		}
		l := run.Legit
		if l.Completed != l.Visitors || l.Errors != 0 || l.Lost != 0 {
			t.Errorf("%s: %d of %d visitors through, %d errors, %d lost: want all through (%v)", name, l.Completed, l.Visitors, l.Errors, l.Lost, l.Failures)
		}
		if run.RSS.Peak == 0 {
			t.Errorf("%s: no RSS read from /proc/%d/status", name, s.pid)
		}
	}
	if len(r.Attacks) != len(gwAttackNames) {
		t.Fatalf("attacks run: %d, want %d", len(r.Attacks), len(gwAttackNames))
	}
	for _, a := range r.Attacks {
		if a.Sent == 0 {
			t.Errorf("%s: sent nothing (%s; %s)", a.Name, a.codesString(), a.Detail)
		}
	}
	for _, c := range r.Checks {
		if !c.OK && c.Name != "legit: enter→READY p95 ≤ 2× baseline" && c.Name != "legit: protected p95 ≤ 2× baseline" {
			t.Errorf("check %q failed: %s", c.Name, c.Got)
		}
	}
	writeReports(t, &o, rep)
}
