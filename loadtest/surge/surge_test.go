package surge

import (
	"bytes"
	"context"
	"encoding/base64"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/report"
	"waitingroom/loadtest/internal/scenario"
	"waitingroom/loadtest/internal/smoke"
)

func fakeJWT(payload string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"HS256"}`)) + "." + enc([]byte(payload)) + ".sig"
}

func TestTicketOf(t *testing.T) {
	for _, tc := range []struct {
		name, tok string
		want      int64
		ok        bool
	}{
		{"seq", fakeJWT(`{"sub":"7","room":"default","seq":12345,"kind":"queue"}`), 12345, true},
		{"no seq", fakeJWT(`{"sub":"7"}`), 0, false},
		{"zero seq", fakeJWT(`{"seq":0}`), 0, false},
		{"not JSON", fakeJWT(`seq=3`), 0, false},
		{"two parts", "a.b", 0, false},
		{"bad base64", "a.!!!.c", 0, false},
		{"empty", "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ticketOf(tc.tok)
			if (err == nil) != tc.ok || got != tc.want {
				t.Errorf("ticketOf: got %d, %v; want %d, ok %v", got, err, tc.want, tc.ok)
			}
		})
	}
}

// adms builds admissions ticket i+1 → times[i] (seconds).
func adms(times ...int) []admission {
	base := time.Unix(1_800_000_000, 0)
	out := make([]admission, len(times))
	for i, s := range times {
		out[i] = admission{ticket: int64(i + 1), at: base.Add(time.Duration(s) * time.Second)}
	}
	return out
}

func TestFIFOInversions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		times []int
		want  int64
	}{
		{"empty", nil, 0},
		{"one", []int{5}, 0},
		{"in order", []int{1, 2, 3, 4}, 0},
		{"same tick is not an inversion", []int{1, 1, 1, 2, 2}, 0},
		{"one swap", []int{1, 3, 2, 4}, 1},
		{"reversed", []int{4, 3, 2, 1}, 6},
		{"late first ticket", []int{9, 1, 1, 1}, 3},
		{"tie then earlier", []int{2, 2, 1}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fifoInversions(adms(tc.times...)); got != tc.want {
				t.Errorf("fifoInversions(%v): got %d, want %d", tc.times, got, tc.want)
			}
		})
	}
}

// TestFIFOInversionsShuffled checks the merge count against the O(n²)
// definition, with tickets given in a random order and many ties.
func TestFIFOInversionsShuffled(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		n := rng.IntN(300)
		times := make([]int, n)
		for i := range times {
			times[i] = rng.IntN(20)
		}
		var want int64
		for i := range n {
			for j := i + 1; j < n; j++ {
				if times[i] > times[j] {
					want++
				}
			}
		}
		a := adms(times...)
		rng.Shuffle(len(a), func(i, j int) { a[i], a[j] = a[j], a[i] })
		if got := fifoInversions(a); got != want {
			t.Fatalf("n=%d: got %d, want %d", n, got, want)
		}
	}
}

func TestETAAccuracy(t *testing.T) {
	s := func(eta, real float64) etaSample {
		return etaSample{eta: time.Duration(eta * float64(time.Second)), real: time.Duration(real * float64(time.Second))}
	}
	got := newETAAccuracy([]etaSample{
		s(10, 10), // 0 %
		s(12, 10), // 20 %
		s(5, 10),  // 50 %
		s(1, 0.2), // |0.8| ÷ 1 s floor = 80 %
		s(30, 10), // 200 %
	})
	if got.Count != 5 || got.MedianAPE != 50 || got.P90APE != 200 {
		t.Errorf("got %+v, want count 5, median 50 %%, p90 200 %%", got)
	}
	// Signed errors −5, 0, 0.8, 2, 20: the median is 0.8 s.
	if math.Abs(got.MedianErrSeconds-0.8) > 1e-9 {
		t.Errorf("median signed error: got %v, want 0.8", got.MedianErrSeconds)
	}
	if z := newETAAccuracy(nil); z != (etaAccuracy{}) {
		t.Errorf("no samples: got %+v, want zero", z)
	}
	// Shown at entry to all five: 0 s after, on median and at most.
	if got.AtEntry != 5 || got.MedianAfterSeconds != 0 || got.MaxAfterSeconds != 0 {
		t.Errorf("at entry %d, after median %v max %v; want 5, 0, 0", got.AtEntry, got.MedianAfterSeconds, got.MaxAfterSeconds)
	}
}

// TestFirstEstimate: the first estimate is the first status shown with
// one, at entry or after; withheld statuses before it are passed over.
func TestFirstEstimate(t *testing.T) {
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	shown := []etaShown{{at: sec(1), eta: -1}, {at: sec(4), eta: -1}, {at: sec(16), pos: 90, eta: 40, known: true}, {at: sec(20), eta: 30}}
	got, ok := firstEstimate(shown, sec(1), sec(66))
	if want := (etaSample{eta: sec(40), real: sec(50), after: sec(15), at: sec(16), pos: 90}); !ok || got != want {
		t.Errorf("first estimate = %+v %v, want %+v", got, ok, want)
	}
	if _, ok := firstEstimate(shown[:2], sec(1), sec(66)); ok {
		t.Error("an estimate where all were withheld")
	}
	// 40 s promised for 50 s: 20 %; another shown at entry, exact.
	a := newETAAccuracy([]etaSample{got, {eta: sec(10), real: sec(10)}})
	if a.AtEntry != 1 || a.MedianAPE != 0 || a.P90APE != 20 || a.MedianAfterSeconds != 0 || a.MaxAfterSeconds != 15 {
		t.Errorf("accuracy = %+v", a)
	}
}

func TestPercentileF(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for p, want := range map[float64]float64{50: 5, 90: 9, 91: 10, 100: 10, 1: 1} {
		if got := percentileF(v, p); got != want {
			t.Errorf("p%v: got %v, want %v", p, got, want)
		}
	}
	if got := percentileF(nil, 50); got != 0 {
		t.Errorf("empty: got %v", got)
	}
}

// TestSurgeCollect feeds the report hand-made user records: each outcome
// lands in its count, a user waiting at the end is lost, the timeline and
// the samples are summarized.
func TestSurgeCollect(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	ended, cancel := contextCancelled()
	defer cancel()
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	r := &surgeRun{ctx: ended, start: start, users: []surgeUser{
		{transport: "sse", outcome: surgeOrdered, enterAt: sec(0.1), enterLat: sec(0.01), ticket: 1, shown: []etaShown{{at: sec(0.1), pos: 1, eta: 2, known: true}},
			readyAt: sec(2.2), admittedAt: start.Add(sec(2.1)), orderAt: sec(2.3), lags: []lagSample{{at: sec(2.2), lag: sec(0.05)}}},
		{transport: "ws", outcome: surgeOrdered, enterAt: sec(0.2), enterLat: sec(0.02), ticket: 2,
			readyAt: sec(1.5), admittedAt: start.Add(sec(1.4)), orderAt: sec(1.6)}, // admitted before ticket 1: one inversion
		{transport: "poll", outcome: surgeOrderFailed, why: "order: HTTP 409", enterAt: sec(0.3), ticket: 3, readyAt: sec(3), admittedAt: start.Add(sec(2.9)), orderAt: sec(3.1), pollErrors: 2, polls: 5},
		{transport: "sse", outcome: surgeGone, why: "gone", enterAt: sec(0.4), ticket: 4},
		{transport: "sse", outcome: surgeWaiting, why: "stream: closed by server", enterAt: sec(0.5), ticket: 5, drops: 3},
		{transport: "sse", outcome: surgeEnterFailed, why: "enter: HTTP 503"},
		{outcome: surgeNotArrived},
	}}
	rep := &Report{Users: 7, Seconds: 3.5}
	rep.collect(r, measure.NewRecorder(), samples{
		// Over at 1 s; at 3.5 s the limit was cut from 10 to 6 while 8 held
		// slots: not over within the hold (no orders recorded: 1 s), over at 6 s.
		Room: []roomSample{{At: sec(0.5), Active: 3, Target: 5}, {At: sec(1), Active: 6, Target: 5}, {At: sec(2), Active: 2, Target: 5},
			{At: sec(3), Active: 8, Target: 10}, {At: sec(3.5), Active: 8, Target: 6}, {At: sec(6), Active: 8, Target: 6}},
		Proc: []procSample{{At: sec(0.5), RSSBytes: 10 << 20, CPUSeconds: 1}, {At: sec(1.5), RSSBytes: 30 << 20, CPUSeconds: 1.5}},
	})
	for name, c := range map[string][2]int{
		"arrived": {rep.Arrived, 6}, "entered": {rep.Entered, 5}, "enterFailed": {rep.EnterFailed, 1},
		"ready": {rep.Ready, 3}, "ordered": {rep.Ordered, 2}, "orderFailed": {rep.OrderFailed, 1},
		"gone": {rep.Gone, 1}, "lost": {rep.Lost, 1}, "lostAtEnd": {rep.LostAtEnd, 1},
		"errors": {rep.ErrorCount, 1 + 1 + 2}, "drops": {rep.Drops, 3}, "admissions": {rep.Admissions, 3},
		"inversions": {int(rep.Inversions), 1}, "eta": {rep.ETA.Count, 1}, "lag": {rep.Lag.Count, 1},
		"maxActive": {int(rep.MaxActive), 8}, "overTarget": {rep.SamplesOverLimit, 2}, "timeline": {len(rep.Timeline), 5},
		"admitted@1s": {rep.Timeline[1].Admitted, 1}, "admitted@2s": {rep.Timeline[2].Admitted, 1}, "entered@0s": {rep.Timeline[0].Entered, 5},
	} {
		if c[0] != c[1] {
			t.Errorf("%s: got %d, want %d", name, c[0], c[1])
		}
	}
	if rep.ServerCPUMean != 50 || rep.ServerRSSMax != 30 {
		t.Errorf("server: CPU mean %v %%, RSS max %v MiB; want 50, 30", rep.ServerCPUMean, rep.ServerRSSMax)
	}
	if rep.DrainSeconds != 3 {
		t.Errorf("drain: got %v s, want 3 (the last READY)", rep.DrainSeconds)
	}
	var b bytes.Buffer
	rep.Print(&b)
	for _, want := range []string{"FIFO inversions", "FAIL", "users lost"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("printed report lacks %q:\n%s", want, b.String())
		}
	}
}

func TestHTMLReportIsSelfContained(t *testing.T) {
	rep := &Report{Users: 3, Transport: "sse", Seconds: 2, Timeline: []TimelinePoint{{T: 0, Entered: 3, HasEnter: true, EnterP50: 4}, {T: 1, Admitted: 3}},
		RoomSeries: []roomSample{{At: time.Second, Waiting: 2, Active: 1, Target: 5}}}
	rep.Checks = rep.checks()
	path := filepath.Join(t.TempDir(), "r.html")
	if err := report.WriteHTML(path, rep); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	if n := strings.Count(html, "<svg"); n != 9 {
		t.Errorf("charts: got %d, want 9", n)
	}
	for _, bad := range []string{"<script", " src=", "<link", "url("} {
		if strings.Contains(html, bad) {
			t.Errorf("the page refers to %q: it must need no network", bad)
		}
	}
}

// contextCancelled is a context that has already ended: a run whose
// --max-duration is over.
func contextCancelled() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx, cancel
}

// TestSmokeSurge runs a small surge of the shopper model — think times,
// no-shows, abandons, reloads, a burst and a trickle — and prints its ETA
// accuracy without judging it: the estimator's bar is measured by the
// benchmark, not here.
func TestSmokeSurge(t *testing.T) {
	// A short entry window and idle timeout: no-shows and those who gave
	// up free their places within seconds, so the small room keeps moving.
	s := smoke.StartWith(t, 300, map[string]string{"WR_ENTRY_TTL": "20s", "WR_IDLE_TIMEOUT": "30s"})
	dir := t.TempDir()
	var o scenario.Options
	// Sized so the room moves for about half a minute: the estimator
	// withholds the ETA until it has measured orders and no-shows (about
	// ten seconds here), then the waiting users are shown estimates.
	args := s.Args("-n", "300", "--over", "1s", "--transport", "mix", "--target", "30", "--max-duration", "3m",
		"--think-median", "2s", "--think-sigma", "0.5", "--no-shows", "3%", "--abandons", "10%", "--reloads", "20%",
		"--patience", "4s", "--burst", "90%", "--trickle-over", "3s",
		"--mint-tokens", "--jwt-secret", smoke.Secret, "--out", filepath.Join(dir, "r.json"), "--html", filepath.Join(dir, "r.html"))
	rep, err := Run(t.Context(), &o, args)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.(*Report)
	smoke.LogOnFailure(t, r)
	if r.HitMaxDuration || r.Interrupted {
		t.Fatalf("the run did not finish: max duration %v, interrupted %v", r.HitMaxDuration, r.Interrupted)
	}
	t.Logf("shoppers: READY %d, ordered %d, no-shows %d, abandoned %d, reloaded %d; drained in %.1f s",
		r.Ready, r.Ordered, r.NoShows, r.Abandoned, r.Reloads, r.DrainSeconds)
	t.Logf("ETA, first estimate: %s", r.etaString())
	t.Logf("ETA over the wait: %s", r.etaWaitString())
	t.Logf("ETA by position: %s", r.etaBandString())
	if r.Entered != 300 || r.Ready+r.Abandoned != 300 || r.Ordered != r.Ready-r.NoShows || r.NoShows == 0 {
		t.Errorf("entered / READY + abandoned / ordered: got %d / %d + %d / %d (no-shows %d), want 300, 300, READY − no-shows, some no-shows",
			r.Entered, r.Ready, r.Abandoned, r.Ordered, r.NoShows)
	}
	if r.ErrorCount != 0 || r.AttemptErrors != 0 || r.Lost != 0 || r.Inversions != 0 || r.Gone != 0 {
		t.Errorf("errors %d (attempts %d), lost %d, FIFO inversions %d, gone %d: want 0 each (%v %v)", r.ErrorCount, r.AttemptErrors, r.Lost, r.Inversions, r.Gone, r.LostWhy, r.EnterFailures)
	}
	if r.Admissions != r.Ready || r.NoAdmitTime != 0 {
		t.Errorf("admissions compared: got %d (%d without a time), want %d", r.Admissions, r.NoAdmitTime, r.Ready)
	}
	if r.RoomSamples == 0 || r.SamplesOverLimit != 0 || r.MaxActive > 30 {
		t.Errorf("active: max %d of 30, %d of %d samples over", r.MaxActive, r.SamplesOverLimit, r.RoomSamples)
	}
	if r.ByTransport["sse"] == 0 || r.ByTransport["ws"] == 0 || r.ByTransport["poll"] == 0 {
		t.Errorf("users by transport: %v, want all three", r.ByTransport)
	}
	// The room's counters account for every admission: those the tool saw
	// READY and the abandoners admitted after they gave up.
	t.Logf("no-shows by cause: %s; slots: %s", r.Absent.noShowString(r.NoShows), r.Absent.slotString(r.Target, r.DrainSeconds))
	if a := r.Absent; !a.Known || a.Admitted != int64(r.Ready)+a.AbandonedAdmitted || a.AbandonedAdmitted > int64(r.Abandoned) {
		t.Errorf("absent figures %+v: want known, admitted = READY %d + abandoners admitted (at most %d)", a, r.Ready, r.Abandoned)
	}
	if r.ETA.Count == 0 || r.ETAWait.Count == 0 || len(r.ETASeries) == 0 {
		t.Errorf("ETA: %d first estimates, %d over the wait, %d seconds of series: want some of each", r.ETA.Count, r.ETAWait.Count, len(r.ETASeries))
	}
	// The run leaves the room as it found it: targetActive restored.
	if st, err := s.RoomState(t); err != nil || st.TargetActive != 20 {
		t.Errorf("targetActive after the run: got %d (%v), want 20", st.TargetActive, err)
	}

	// The reports are written by main; write them as main does.
	page := smoke.WriteReports(t, &o, rep)
	if n := strings.Count(page, "<svg"); n < 9 {
		t.Errorf("HTML report: %d charts, want at least 9", n)
	}
	if !strings.Contains(page, "ETA shown vs real remaining") {
		t.Errorf("HTML report: no ETA chart")
	}
}
