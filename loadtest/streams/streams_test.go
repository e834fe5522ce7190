package streams

import (
	"context"
	"strings"
	"testing"
	"time"

	"waitingroom/loadtest/internal/fakeroom"
	"waitingroom/loadtest/internal/scenario"
	"waitingroom/loadtest/internal/stream"
)

func mustRunStreams(t *testing.T, args []string) *streamsReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var o scenario.Options
	rep, err := Run(ctx, &o, args)
	if err != nil {
		t.Fatalf("runStreams: %v", err)
	}
	r, ok := rep.(*streamsReport)
	if !ok {
		t.Fatalf("report is %T", rep)
	}
	var b strings.Builder
	r.Print(&b)
	t.Log(b.String())
	return r
}

func TestStreamsScenarioAgainstFake(t *testing.T) {
	for _, tc := range []struct {
		transport string
		mint      bool
	}{{"sse", true}, {"ws", false}} {
		t.Run(tc.transport, func(t *testing.T) {
			f := fakeroom.Start(t, &fakeroom.Server{LagMs: 40, Heartbeat: 20 * time.Millisecond})
			args := f.Args("-n", "40", "--transport", tc.transport, "--duration", "20s", "--conns", "8")
			if tc.mint {
				args = append(args, "--mint-tokens", "--jwt-secret", testSecret)
			}
			r := mustRunStreams(t, args)
			if r.Prepared != 40 || r.Opened != 40 || r.OpenFailed != 0 {
				t.Errorf("prepared %d, opened %d, failed %d; want 40, 40, 0", r.Prepared, r.Opened, r.OpenFailed)
			}
			if r.Ready != 40 || r.Ordered != 40 || f.Orders.Load() != 40 {
				t.Errorf("READY %d, ordered %d, server orders %d; want 40 each", r.Ready, r.Ordered, f.Orders.Load())
			}
			if r.Dropped != 0 || r.Gone != 0 || r.StillWaiting != 0 {
				t.Errorf("dropped %d, gone %d, still waiting %d; want 0 (drops: %v)", r.Dropped, r.Gone, r.StillWaiting, r.Drops)
			}
			// Every stream: the on-connect status (no lag), then WAITING at 1 and READY.
			if got, want := r.Events, 3*40; got != want {
				t.Errorf("events %d, want %d", got, want)
			}
			if l := r.Lag["all"]; l.Count != 80 || l.P50 < 40*time.Millisecond {
				t.Errorf("lag: %d samples with p50 %v; want 80 samples ≥ 40 ms (the fake's ts is 40 ms old)", l.Count, l.P50)
			}
			if r.Lag["READY"].Count != 40 || r.Lag["1–100"].Count != 40 || r.Lag[">1000"].Count != 0 {
				t.Errorf("lag bands %+v", r.Lag)
			}
			if r.RSSPerStreamKiB != 20 {
				t.Errorf("RSS per stream %.2f KiB, want 20 (the fake's)", r.RSSPerStreamKiB)
			}
			if r.DriveSeconds >= 20 {
				t.Errorf("the drive took %.1f s: it should end once every stream ordered", r.DriveSeconds)
			}
			if got := f.Target.Load(); got != 7 {
				t.Errorf("targetActive after the run = %d, want the original 7", got)
			}
			if got := f.Leaves.Load(); got != 0 {
				t.Errorf("%d leaves; every user ordered, none should leave", got)
			}
		})
	}
}

func TestStreamsScenarioWithoutTS(t *testing.T) {
	f := fakeroom.Start(t, &fakeroom.Server{NoTS: true})
	r := mustRunStreams(t, f.Args("-n", "5", "--duration", "10s", "--mint-tokens", "--jwt-secret", testSecret))
	if r.Ordered != 5 || r.EventsWithoutTS != 10 || r.Lag["all"].Count != 0 {
		t.Errorf("ordered %d, events without ts %d, lag samples %d; want 5, 10, 0", r.Ordered, r.EventsWithoutTS, r.Lag["all"].Count)
	}
	var b strings.Builder
	r.Print(&b)
	if !strings.Contains(b.String(), "lag is unknown") || !strings.Contains(b.String(), "unknown (no events") {
		t.Errorf("the report does not say the lag is unknown:\n%s", b.String())
	}
}

func TestStreamsScenarioGoneAndSilent(t *testing.T) {
	t.Run("gone", func(t *testing.T) {
		f := fakeroom.Start(t, &fakeroom.Server{Gone: true})
		r := mustRunStreams(t, f.Args("-n", "6", "--duration", "5s", "--mint-tokens", "--jwt-secret", testSecret))
		if r.Opened != 6 || r.Gone != 6 || r.Dropped != 0 || r.Ready != 0 {
			t.Errorf("opened %d, gone %d, dropped %d, READY %d; want 6, 6, 0, 0", r.Opened, r.Gone, r.Dropped, r.Ready)
		}
		if got := f.Leaves.Load(); got != 6 {
			t.Errorf("%d leaves, want 6: users not ordered give their place back", got)
		}
	})
	t.Run("silent", func(t *testing.T) {
		f := fakeroom.Start(t, &fakeroom.Server{Silent: true})
		r := mustRunStreams(t, f.Args("-n", "6", "--duration", "3s", "--idle", "300ms", "--mint-tokens", "--jwt-secret", testSecret))
		if r.Opened != 6 || r.Dropped != 6 || r.Drops["timeout"] != 6 {
			t.Errorf("opened %d, dropped %d %v; want 6 opened, 6 dropped by timeout", r.Opened, r.Dropped, r.Drops)
		}
	})
	for _, transport := range []string{"sse", "ws"} {
		t.Run("heartbeats keep a quiet stream alive/"+transport, func(t *testing.T) {
			f := fakeroom.Start(t, &fakeroom.Server{Heartbeat: 50 * time.Millisecond, NoAdmit: true})
			r := mustRunStreams(t, f.Args("-n", "4", "--duration", "1s", "--idle", "300ms", "--mint-tokens", "--jwt-secret", testSecret,
				"--transport", transport))
			if r.Dropped != 0 || r.StillWaiting != 4 {
				t.Errorf("dropped %d %v, still waiting %d: heartbeats should keep the 4 streams alive", r.Dropped, r.Drops, r.StillWaiting)
			}
			// A second of streams at a heartbeat every 50 ms: about 80.
			if r.Heartbeats < 4 {
				t.Errorf("%d heartbeats counted over 4 streams × 1 s", r.Heartbeats)
			}
		})
	}
}

func TestLagBand(t *testing.T) {
	for _, tc := range []struct {
		st   stream.Status
		want string
	}{
		{stream.Status{Status: "READY"}, "READY"},
		{stream.Status{Status: "WAITING", Position: 1}, "1–100"},
		{stream.Status{Status: "WAITING", Position: 100}, "1–100"},
		{stream.Status{Status: "WAITING", Position: 101}, "101–1000"},
		{stream.Status{Status: "WAITING", Position: 1000}, "101–1000"},
		{stream.Status{Status: "WAITING", Position: 1001}, ">1000"},
	} {
		if got := lagBands[lagBand(tc.st)]; got != tc.want {
			t.Errorf("lagBand(%+v) = %q, want %q", tc.st, got, tc.want)
		}
	}
}

// Ctrl-C: the run ends early, the report of what was measured comes back,
// the streams close, the users leave and targetActive is restored.
func TestStreamsScenarioInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Ctrl-C once every stream is open and admission resumes.
	f := fakeroom.Start(t, &fakeroom.Server{NoAdmit: true, Heartbeat: 20 * time.Millisecond, OnDrive: cancel})
	var o scenario.Options
	start := time.Now()
	rep, err := Run(ctx, &o, f.Args("-n", "8", "--duration", "30s", "--mint-tokens", "--jwt-secret", testSecret))
	if err != nil {
		t.Fatalf("runStreams: %v", err)
	}
	r := rep.(*streamsReport)
	if !r.Interrupted || r.Opened != 8 || r.StillWaiting != 8 {
		t.Errorf("interrupted %v, opened %d, still waiting %d; want true, 8, 8", r.Interrupted, r.Opened, r.StillWaiting)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the run took %v after Ctrl-C", d)
	}
	if got := f.Leaves.Load(); got != 8 {
		t.Errorf("%d leaves, want 8", got)
	}
	if got := f.Target.Load(); got != 7 {
		t.Errorf("targetActive after the run = %d, want the original 7", got)
	}
}

const testSecret = "0123456789abcdef0123456789abcdef-test"
