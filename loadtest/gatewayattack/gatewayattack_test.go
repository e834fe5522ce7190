package gatewayattack

import (
	"flag"
	"io"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"waitingroom/loadtest/internal/scenario"
	"waitingroom/loadtest/internal/smoke"
	"waitingroom/server/pass"
)

// TestSmokeGatewayAttack runs the gateway-attack scenario for a few
// seconds against the command in gateway mode, in front of the origin the
// scenario starts: no protected request reaches it without a pass, and
// every legitimate visitor gets through, beside every attack, and the
// server's RSS stays within 64 MiB of the baseline's although the slow
// readers and the bodies would hold 128 MiB if the gateway buffered them.
// Latency is not judged here (the load run is the place for it).
func TestSmokeGatewayAttack(t *testing.T) {
	originAddr := smoke.FreeAddr(t)
	s := smoke.StartWith(t, 1, map[string]string{
		"WR_RATE_LIMITS":    "on",
		"WR_UPSTREAM":       "http://" + originAddr,
		"WR_PROTECT":        "POST /api/orders=sale, GET /checkout/*=sale, GET /members/*=club",
		"WR_PASS_KEY":       pass.GenerateKey(),
		"WR_ROOMS":          "default,sale,club",
		"WR_POW_DIFFICULTY": "8",
		"WR_TARGET_ACTIVE":  "100",
	})
	dir := t.TempDir()
	var o scenario.Options
	args := s.Args("--room", "sale", "-n", "40", "--over", "2s", "--users-per-addr", "4", "--visitor-bound", "90s",
		"--origin-listen", originAddr, "--server-pid", strconv.Itoa(s.PID), "--attack-for", "2s",
		"--smuggle", "5", "--variant-rounds", "1", "--slow-readers", "3", "--download-mib", "32",
		"--bodies", "2", "--body-mib", "8", "--share-addrs", "4", "--stuffing-bare", "40", "--stuffing-solved", "40",
		"--rss-slack", "64", "--out", filepath.Join(dir, "r.json"), "--html", filepath.Join(dir, "r.html"))
	rep, err := Run(t.Context(), &o, args)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.(*gwReport)
	smoke.LogOnFailure(t, r)
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
			t.Errorf("%s: no RSS read from /proc/%d/status", name, s.PID)
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
	smoke.WriteReports(t, &o, rep)
}

// TestOriginProtected: the scenario's origin routes every variant the
// attack sends to its protected handler (or the attack would prove
// nothing), and leaves the unprotected paths alone.
func TestOriginProtected(t *testing.T) {
	for _, v := range routeVariants {
		_, raw, _ := strings.Cut(v, " ")
		u, err := url.ParseRequestURI(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		// What net/http gives the handler once the gateway has forwarded it.
		if !originProtected(u.Path) {
			t.Errorf("%s (path %q): not protected at the origin, canonical %q", v, u.Path, originCanon(u.Path))
		}
	}
	for _, p := range []string{"/hello", "/upload", "/download/big", "/api/items", "/api/ordersx", "/checkout"} {
		if originProtected(p) {
			t.Errorf("%s: protected at the origin, want not", p)
		}
	}
}

func TestGatewayAttackFlags(t *testing.T) {
	parse := func(args ...string) (gwConfig, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c := gwFlags(fs)
		if err := fs.Parse(args); err != nil {
			return gwConfig{}, err
		}
		return c()
	}
	c, err := parse("--attacks", "smuggle,stuffing", "--over", "3s")
	if err != nil || len(c.on) != 2 || !c.on["smuggle"] || !c.on["stuffing"] || c.attackFor != 3*time.Second {
		t.Errorf("two attacks: %v %v, attack window %v", c.on, err, c.attackFor)
	}
	if c, err := parse("--smuggle", "0", "--session-room", ""); err != nil || c.on["smuggle"] || c.on["session-share"] || len(c.on) != len(gwAttackNames)-2 {
		t.Errorf("intensity 0 and no session room turn those off: %v %v", c.on, err)
	}
	for _, bad := range [][]string{{"--attacks", "nope"}, {"-n", "0"}, {"--stuffing-addrs", "300"}, {"--protected", "/api/orders"}} {
		if _, err := parse(bad...); err == nil {
			t.Errorf("%v: accepted, want an error", bad)
		}
	}
}
