package attack

import (
	"bytes"
	"compress/gzip"
	"flag"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/scenario"
	"waitingroom/loadtest/internal/smoke"
	"waitingroom/loadtest/surge"
)

// TestSmokeAttack is the attack scenario in small: 300 users from 75
// addresses, rate limits on (the server's defaults), and every attack
// scaled down, against a real server. It asserts counts only — the
// legitimate users' errors, losses and FIFO order, each attack refused as
// the server's defences should refuse it, the server's memory bounded —
// never a latency (the enter p99 bar is the report's, not the test's).
func TestSmokeAttack(t *testing.T) {
	const legit, attackers = 300, 5 // the owner, the cross-site victim, the stream flooder, 2 storm tokens
	s := smoke.StartWith(t, legit+attackers, map[string]string{
		"WR_RATE_LIMITS": "on",
		// A ceiling of 2,000 makes the per-address cap 100 (5 %): the idle
		// flood's 150 sockets go past it.
		"WR_MAX_CONNS": "2000",
	})
	dir := t.TempDir()
	var o scenario.Options
	// The server is a child process (the command, built without the race
	// detector): the RSS read from its /metrics is its own. A server that
	// inflated three 64-MiB bombs would hold at least 192 MiB more than the
	// baseline's max; --rss-slack 256 bounds the growth loosely, and the
	// bombs' own check (415/413) is the sharp one.
	args := s.Args("-n", "300", "--over", "3s", "--transport", "mix", "--target", "100", "--max-duration", "3m", "--users-per-addr", "4",
		"--mint-tokens", "--jwt-secret", smoke.Secret, "--password", smoke.Password,
		"--attack-for", "3s", "--stuffing", "120", "--stuffing-addrs", "2", "--stuffing-conns", "2", "--storm-tokens", "2", "--storm-requests", "2000",
		"--idle-sockets", "150", "--stream-flood", "12", "--bombs", "3", "--bomb-mib", "64", "--cross-site", "2", "--rss-slack", "256",
		"--out", filepath.Join(dir, "r.json"), "--html", filepath.Join(dir, "r.html"))
	rep, err := Run(t.Context(), &o, args)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.(*attackReport)
	smoke.LogOnFailure(t, r)
	if r.Baseline == nil || r.Attack == nil {
		t.Fatalf("runs: baseline %v, under attack %v: want both", r.Baseline != nil, r.Attack != nil)
	}
	for _, run := range []*surge.Report{r.Baseline, r.Attack} {
		if run.HitMaxDuration || run.Interrupted {
			t.Fatalf("%s: the run did not finish", run.Scenario)
		}
		if run.SourceAddrs != 75 {
			t.Errorf("%s: source addresses %d, want 75", run.Scenario, run.SourceAddrs)
		}
		if run.Entered != legit || run.Ordered != legit {
			t.Errorf("%s: entered / ordered %d / %d, want %d each", run.Scenario, run.Entered, run.Ordered, legit)
		}
		if run.ErrorCount != 0 || run.AttemptErrors != 0 || run.Lost != 0 || run.Inversions != 0 {
			t.Errorf("%s: errors %d (attempts %d: enter %s, orders %s, polls %s), lost %d %v, FIFO inversions %d: want 0 each",
				run.Scenario, run.ErrorCount, run.AttemptErrors, run.Enter.CodesString(), run.Orders.CodesString(), run.Position.CodesString(), run.Lost, run.LostWhy, run.Inversions)
		}
	}
	if r.BcryptBaseline != 0 {
		t.Errorf("BCrypt verifications without attack: %v, want 0 (the crowd's tokens are minted)", r.BcryptBaseline)
	}
	for _, a := range []struct {
		name string
		ran  bool
	}{{"stuffing", r.Stuffing != nil}, {"storm", r.Storm != nil}, {"idle", r.IdleFlood != nil}, {"streams", r.StreamFlood != nil},
		{"bomb", r.Bombs != nil}, {"cross-site", r.CrossSite != nil}} {
		if !a.ran {
			t.Errorf("attack %s: no result", a.name)
		}
	}
	// Every check but the latency ratio: the legitimate users again, the
	// server's memory, and each attack refused as built.
	for _, c := range r.Checks {
		if strings.Contains(c.Name, "p99") {
			continue
		}
		if !c.OK {
			t.Errorf("%s: %s", c.Name, c.Got)
		}
	}
	if st, err := s.RoomState(t); err != nil || st.TargetActive != 20 || st.Waiting != 0 {
		t.Errorf("the room after the runs: targetActive %d, waiting %d (%v): want 20 (restored), 0 (the attackers left)", st.TargetActive, st.Waiting, err)
	}
	if n := strings.Count(smoke.WriteReports(t, &o, rep), "<svg"); n != 6 {
		t.Errorf("HTML report: %d charts, want 6", n)
	}
}

func TestBombBody(t *testing.T) {
	const mib = 8
	body, err := bombBody(mib)
	if err != nil {
		t.Fatal(err)
	}
	if len(body) > 1<<10 {
		t.Errorf("the bomb is %d bytes, want a tiny body", len(body))
	}
	// Inflated once: still gzip; twice: mib MiB of zeros.
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	zr2, err := gzip.NewReader(zr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, zr2)
	if err != nil || n != mib<<20 {
		t.Errorf("inflated twice: %d bytes (%v), want %d", n, err, mib<<20)
	}
	if again, _ := bombBody(mib); !bytes.Equal(again, body) {
		t.Errorf("a second call made another body")
	}
}

func TestAttackFlags(t *testing.T) {
	parse := func(args ...string) (attackConfig, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		get := attackFlags(fs)
		if err := fs.Parse(args); err != nil {
			return attackConfig{}, err
		}
		return get()
	}
	c, err := parse()
	if err != nil || len(c.on) != len(attackNames) {
		t.Errorf("default: %v (%v), want every attack", c.on, err)
	}
	c, err = parse("--attacks", "storm,bomb", "--bombs", "0")
	if err != nil || !c.on["storm"] || len(c.on) != 1 {
		t.Errorf("storm,bomb with --bombs 0: %v (%v), want storm only", c.on, err)
	}
	if c, err = parse("--attacks", "none"); err != nil || len(c.on) != 0 {
		t.Errorf("none: %v (%v)", c.on, err)
	}
	if _, err = parse("--attacks", "ddos"); err == nil {
		t.Errorf("an unknown attack is refused")
	}
	if _, err = parse("--stuffing-addrs", "0"); err == nil {
		t.Errorf("--stuffing-addrs 0 is refused")
	}
}

// TestAttackChecks feeds the report hand-made figures: the legitimate
// users' bar against the baseline, and each attack's verdict.
func TestAttackChecks(t *testing.T) {
	sum := func(codes map[int]int) measure.Summary {
		n := 0
		for _, k := range codes {
			n += k
		}
		return measure.Summary{Count: n, Codes: codes}
	}
	base := &surge.Report{Entered: 10, Admissions: 10, EnterLatency: measure.Latency{Count: 10, P99: 10 * time.Millisecond}, ServerRSSMax: 100}
	good := &attackReport{RSSSlackMiB: 64, MaxStreams: 3, Baseline: base,
		Attack:      &surge.Report{Entered: 10, Admissions: 10, EnterLatency: measure.Latency{Count: 10, P99: 20 * time.Millisecond}, ServerRSSMax: 160},
		Stuffing:    &stuffingResult{Attempts: 100, Owner: "user11", OwnerCode: 200, Codes: sum(map[int]int{401: 30, 429: 70})},
		Storm:       &stormResult{Tokens: 2, Codes: sum(map[int]int{200: 10, 429: 900})},
		IdleFlood:   &idleFloodResult{Connected: 150, Refused503: 50},
		StreamFlood: &streamFloodResult{Attempts: 12, OpenAfterSettle: 3, Codes: sum(map[int]int{200: 10, 429: 2})},
		Bombs:       &bombResult{Codes: map[string]measure.Summary{"login": sum(map[int]int{415: 1}), "orders": sum(map[int]int{415: 1}), "admin": sum(map[int]int{413: 1})}},
		CrossSite:   &crossSiteResult{Leave: sum(map[int]int{403: 2}), WS: sum(map[int]int{403: 2}), PlaceCode: 200},
	}
	for _, c := range good.checks() {
		if !c.OK {
			t.Errorf("good figures: %s fails: %s", c.Name, c.Got)
		}
	}
	// The holes of the server before issue 12, each a failure.
	bad := *good
	bad.Attack = &surge.Report{Entered: 10, Admissions: 10, Lost: 1, EnterLatency: measure.Latency{Count: 10, P99: 21 * time.Millisecond}, ServerRSSMax: 1100}
	bad.Stuffing = &stuffingResult{Attempts: 100, OwnerCode: 429, Codes: sum(map[int]int{401: 30, 429: 70})}
	bad.IdleFlood = &idleFloodResult{Connected: 150, HeldPastDeadline: 150}
	bad.StreamFlood = &streamFloodResult{OpenAfterSettle: 10, Codes: sum(map[int]int{200: 10})}
	bad.Bombs = &bombResult{Codes: map[string]measure.Summary{"login": sum(map[int]int{400: 1}), "orders": sum(map[int]int{415: 1})}}
	bad.CrossSite = &crossSiteResult{Leave: sum(map[int]int{204: 1, 401: 1}), WS: sum(map[int]int{101: 2}), PlaceCode: 404}
	failed := map[string]bool{}
	for _, c := range bad.checks() {
		if !c.OK {
			failed[c.Name] = true
		}
	}
	for _, want := range []string{"legit: users lost", "legit: enter p99 ≤ 2× baseline", "server RSS bounded", "stuffing: owner's correct login",
		"idle sockets: closed by the deadline", "stream flood: ≤ 3 streams held", "bombs: refused unread (415/413)",
		"cross-site: form POST leave → 403", "cross-site: WebSocket → 403", "cross-site: victim keeps the place"} {
		if !failed[want] {
			t.Errorf("bad figures: %q passes", want)
		}
	}
	for _, pass := range []string{"legit: errors", "stuffing: limited before BCrypt", "storm: paced while waiting, no 5xx"} {
		if failed[pass] {
			t.Errorf("bad figures: %q fails, want pass", pass)
		}
	}
	var b bytes.Buffer
	bad.Print(&b)
	for _, want := range []string{"without attack", "credential stuffing", "FAIL", "decompression bombs"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("printed report lacks %q", want)
		}
	}
}
