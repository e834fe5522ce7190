package poll

import (
	"os"
	"path/filepath"
	"testing"

	"waitingroom/loadtest/internal/scenario"
	"waitingroom/loadtest/internal/smoke"
)

// TestSmokePollOpenLoop: with the limits on, users polling at their
// band's pace are never refused (a pacing that ignored pollAfterMs would
// be), and the run reports Redis's cost per poll.
func TestSmokePollOpenLoop(t *testing.T) {
	s := smoke.StartWith(t, 40, map[string]string{"WR_RATE_LIMITS": "on"})
	var o scenario.Options
	rep, err := Run(t.Context(), &o, s.Args("--mode", "open", "--users", "30", "--ahead", "0", "--spread", "500ms", "--duration", "1500ms",
		"--mint-tokens", "--jwt-secret", smoke.Secret, "--redis", s.Redis))
	if err != nil {
		t.Fatal(err)
	}
	r := rep.(*pollReport)
	smoke.LogOnFailure(t, r)
	p := r.Server
	if p == nil || p.Latency.Count == 0 || p.Latency.Codes[200] != p.Latency.Count {
		t.Fatalf("open loop: %+v; want polls, every one answered 200 (no 429 at the band's pace)", p)
	}
	if p.OfferedRPS <= 0 || r.Baseline != nil || r.Login != nil {
		t.Errorf("offered %v polls/s, baseline %v, login %v: want an offered rate and no closed-loop phases", p.OfferedRPS, r.Baseline, r.Login)
	}
	if p.Redis == nil || p.Redis.Requests != p.Answered || p.Redis.Commands <= 0 || p.Redis.RoundTrips <= 0 {
		t.Errorf("Redis cost %+v, want one over the %d answers", p.Redis, p.Answered)
	}
	if st, err := s.RoomState(t); err != nil || st.Waiting != 0 || st.TargetActive != 20 {
		t.Errorf("room after the run: %+v (%v), want nobody waiting and targetActive 20 again", st, err)
	}
}

// TestSmokePollClosedWithEnter: the closed loop with the enter phases
// measures enter for waiting and fresh users against the yardstick, and
// the fresh users leave afterwards.
func TestSmokePollClosedWithEnter(t *testing.T) {
	s := smoke.StartWith(t, 40, nil)
	var o scenario.Options
	rep, err := Run(t.Context(), &o, s.Args("--users", "10", "--ahead", "5", "--conns", "4", "--warmup", "0", "--duration", "300ms",
		"--login-duration", "200ms", "--login-conns", "1", "--password", smoke.Password,
		"--enter", "--enter-users", "3000", "--mint-tokens", "--jwt-secret", smoke.Secret, "--baseline-process"))
	if err != nil {
		t.Fatal(err)
	}
	r := rep.(*pollReport)
	smoke.LogOnFailure(t, r)
	e := r.Enter
	if e == nil || e.Error != "" || e.Waiting == nil || e.Fresh == nil || e.Baseline == nil || e.BaselineBefore == nil ||
		e.Baseline.OK == 0 || r.Baseline == nil || r.Baseline.OK == 0 {
		t.Fatalf("enter phases: %+v", e)
	}
	if e.Waiting.OK == 0 || e.Waiting.OK != e.Waiting.Latency.Count || e.Fresh.OK == 0 || e.Fresh.OK != e.Fresh.Latency.Count {
		t.Errorf("enter answers: waiting %s, fresh %s; want only 2xx", e.Waiting.Latency.CodesString(), e.Fresh.Latency.CodesString())
	}
	if e.FreshEntered != e.Fresh.OK || e.WaitingRatio <= 0 || e.FreshRatio <= 0 {
		t.Errorf("fresh entered %d of %d answers, ratios %v %v", e.FreshEntered, e.Fresh.OK, e.WaitingRatio, e.FreshRatio)
	}
	if st, err := s.RoomState(t); err != nil || st.Waiting != 0 {
		t.Errorf("room after the run: %+v (%v), want nobody waiting (the fresh users left too)", st, err)
	}
}

// TestSmokePollLimit: --limit measures the plain handler, the floor,
// enter (waiting and fresh) and the poll at the front, and reports each
// path against both yardsticks; the floor made its Redis call on every
// request it answered, the server's CPU profile of the fresh enters is
// saved, and the room is left as it was.
func TestSmokePollLimit(t *testing.T) {
	s := smoke.StartWith(t, 40, nil)
	profile := filepath.Join(t.TempDir(), "enter.pprof")
	var o scenario.Options
	rep, err := Run(t.Context(), &o, s.Args("--limit", "--users", "10", "--conns", "4", "--warmup", "0", "--duration", "300ms",
		"--enter-users", "3000", "--mint-tokens", "--jwt-secret", smoke.Secret, "--redis", s.Redis, "--cpu-profile", profile))
	if err != nil {
		t.Fatal(err)
	}
	r := rep.(*pollReport)
	smoke.LogOnFailure(t, r)
	l := r.Limit
	if l == nil || l.Error != "" {
		t.Fatalf("limit: %+v", l)
	}
	for _, p := range []*phase{l.PlainBefore, l.FloorBefore, l.Waiting, l.Fresh, l.Poll, l.FloorAfter, l.PlainAfter} {
		if p == nil || p.OK == 0 || p.OK != p.Latency.Count {
			t.Fatalf("phase %+v: want answers, every one 2xx", p)
		}
	}
	if floor := l.FloorBefore.OK + l.FloorAfter.OK; l.FloorMembers < int64(floor) {
		t.Errorf("the floor's key holds %d members after %d answers: some answers made no Redis call", l.FloorMembers, floor)
	}
	if l.FloorBefore.Redis == nil || l.FloorBefore.Redis.ScriptsPerReq < 0.9 {
		t.Errorf("the floor's Redis cost %+v, want about one script per request", l.FloorBefore.Redis)
	}
	if len(l.Rows) != 5 || l.Plain <= 0 || l.Floor <= 0 {
		t.Fatalf("rows %+v, yardsticks %v / %v req/s", l.Rows, l.Plain, l.Floor)
	}
	for _, row := range l.Rows[2:] {
		if row.VsPlain <= 0 || row.VsFloor <= 0 {
			t.Errorf("row %+v: want both ratios", row)
		}
	}
	if l.FreshEntered != l.Fresh.OK {
		t.Errorf("fresh entered %d of %d answers", l.FreshEntered, l.Fresh.OK)
	}
	if fi, err := os.Stat(profile); err != nil || fi.Size() == 0 || l.CPUProfile != profile {
		t.Errorf("cpu profile %q: %v, report says %q", profile, err, l.CPUProfile)
	}
	if st, err := s.RoomState(t); err != nil || st.Waiting != 0 || st.TargetActive != 20 {
		t.Errorf("room after the run: %+v (%v), want nobody waiting and targetActive 20 again", st, err)
	}
}
