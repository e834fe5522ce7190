package crowd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"waitingroom/internal/loop"
	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/report"
)

// crowdReport is what a crowd run did: counts, and how long its shoppers
// waited.
type crowdReport struct {
	Scenario    string  `json:"scenario"`
	Base        string  `json:"base"`
	Room        string  `json:"room"`
	Transport   string  `json:"transport"`
	Tokens      string  `json:"tokens"`
	Waiting     int     `json:"waitingTarget"`
	ThinkSecs   float64 `json:"thinkSeconds"`
	LeaveShare  float64 `json:"leaveShare"`
	Seconds     float64 `json:"seconds"`
	Interrupted bool    `json:"interrupted"`
	StoppedBy   string  `json:"stoppedBy"`

	Arrived     int `json:"arrived"`
	Entered     int `json:"entered"`
	EnterFailed int `json:"enterFailed"`
	Admitted    int `json:"admitted"`
	Ordered     int `json:"ordered"`
	OrderFailed int `json:"orderFailed"`
	GaveUp      int `json:"gaveUp"`      // left the queue on their own
	Gone        int `json:"gone"`        // told by the server: gone event or 404
	SentHome    int `json:"sentHome"`    // still in the room at the end: left
	LeaveFailed int `json:"leaveFailed"` // leaves that got no 2xx
	Drops       int `json:"streamDrops"`
	PollErrors  int `json:"pollErrors"`

	// Wait: enter → READY of the last admitted shoppers (at most 2048).
	WaitCount int                    `json:"waitCount"`
	WaitP50   float64                `json:"waitP50Seconds"`
	WaitP90   float64                `json:"waitP90Seconds"`
	WaitMax   float64                `json:"waitMaxSeconds"`
	AdmitRate float64                `json:"admittedPerSecond"`
	Failures  map[string]int         `json:"failures"`  // why enters and orders failed
	Endpoints map[string]map[int]int `json:"endpoints"` // endpoint → status → requests (0: no answer)
}

// newReport sums the run up; cause is why it ended.
func (r *crowdRun) newReport(ctx context.Context, cause error) *crowdReport {
	c := &r.cnt
	rep := &crowdReport{Scenario: "crowd", Base: r.o.Base, Room: r.o.Room, Transport: r.cfg.transport, Tokens: r.tokens.kind(),
		Waiting: r.cfg.waiting, ThinkSecs: r.cfg.think.Seconds(), LeaveShare: r.cfg.leave,
		Seconds: time.Since(r.start).Seconds(), Interrupted: ctx.Err() != nil,
		Arrived: int(c.arrived.Load()), Entered: int(c.entered.Load()), EnterFailed: int(c.enterFailed.Load()),
		Admitted: int(c.admitted.Load()), Ordered: int(c.ordered.Load()), OrderFailed: int(c.orderFailed.Load()),
		GaveUp: int(c.gaveUp.Load()), Gone: int(c.gone.Load()), SentHome: int(c.sentHome.Load()),
		LeaveFailed: int(c.leaveFailed.Load()), Drops: int(c.drops.Load()), PollErrors: int(c.pollErrors.Load()),
		Failures: r.why.snapshot()}
	switch {
	case errors.Is(cause, errServerGone):
		rep.StoppedBy = "server gone"
	case errors.Is(cause, errDurationOver):
		rep.StoppedBy = "duration"
	default:
		rep.StoppedBy = "interrupted"
	}
	w := r.waits.sorted()
	rep.WaitCount = len(w)
	rep.WaitP50, rep.WaitP90, rep.WaitMax = measure.Percentile(w, 50).Seconds(), measure.Percentile(w, 90).Seconds(), measure.Percentile(w, 100).Seconds()
	if rep.Seconds > 0 {
		rep.AdmitRate = float64(rep.Admitted) / rep.Seconds
	}
	r.codes.take(r.rec)
	rep.Endpoints = r.codes.snapshot()
	return rep
}

func (rep *crowdReport) Print(w io.Writer) {
	fmt.Fprintf(w, "\ncrowd scenario: %s shoppers kept waiting in room %s at %s for %.0f s (stopped: %s); waiting by %s, think %.1f s, tokens %s\n",
		report.Commas(rep.Waiting), rep.Room, rep.Base, rep.Seconds, rep.StoppedBy, rep.Transport, rep.ThinkSecs, rep.Tokens)
	fmt.Fprintf(w, "  arrived %s  entered %s (failed %d)  admitted %s (%.1f/s)  ordered %s (failed %d)\n",
		report.Commas(rep.Arrived), report.Commas(rep.Entered), rep.EnterFailed, report.Commas(rep.Admitted), rep.AdmitRate, report.Commas(rep.Ordered), rep.OrderFailed)
	fmt.Fprintf(w, "  gave up %d  told gone %d  sent home at the end %d (leaves failed %d)  stream drops %d  poll errors %d\n",
		rep.GaveUp, rep.Gone, rep.SentHome, rep.LeaveFailed, rep.Drops, rep.PollErrors)
	fmt.Fprintf(w, "  wait enter → READY (last %d admitted): p50 %.1f s  p90 %.1f s  max %.1f s\n", rep.WaitCount, rep.WaitP50, rep.WaitP90, rep.WaitMax)
	for _, why := range slices.Sorted(maps.Keys(rep.Failures)) {
		fmt.Fprintf(w, "  failed: %s × %d\n", why, rep.Failures[why])
	}
	for _, ep := range slices.Sorted(maps.Keys(rep.Endpoints)) {
		fmt.Fprintf(w, "  %-9s %s\n", ep, measure.Summary{Codes: rep.Endpoints[ep]}.CodesString())
	}
}

// progress prints a line every 10 s to stderr (the crowd runs for long, in
// the background of make run); the returned func stops it.
func (r *crowdRun) progress() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		loop.Every(ctx, 10*time.Second, func(ctx context.Context) {
			r.codes.take(r.rec)
			c := &r.cnt
			waiting := c.waiting.Load()
			w := r.waits.sorted()
			line := fmt.Sprintf("crowd %4.0fs: waiting %d  admitted %s  ordered %s  gave up %d  | wait p50 %.0fs p90 %.0fs | failed %d",
				time.Since(r.start).Seconds(), waiting, report.Commas(int(c.admitted.Load())), report.Commas(int(c.ordered.Load())), c.gaveUp.Load(),
				measure.Percentile(w, 50).Seconds(), measure.Percentile(w, 90).Seconds(), c.enterFailed.Load()+c.orderFailed.Load())
			if r.adm != nil {
				if st, err := r.adm.RoomState(ctx); err == nil {
					line += fmt.Sprintf("  | room: waiting %d, active %d/%d", st.Waiting, st.Active, st.TargetActive)
				}
			}
			fmt.Fprintln(os.Stderr, line)
		})
	}()
	return sync.OnceFunc(func() { cancel(); <-done })
}

// waitSample keeps the last max waits.
type waitSample struct {
	mu   sync.Mutex
	ring []time.Duration
	next int
}

func newWaitSample(max int) *waitSample { return &waitSample{ring: make([]time.Duration, 0, max)} }

func (w *waitSample) add(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.ring) < cap(w.ring) {
		w.ring = append(w.ring, d)
		return
	}
	w.ring[w.next] = d
	w.next = (w.next + 1) % len(w.ring)
}

// sorted is a sorted copy of the waits kept.
func (w *waitSample) sorted() []time.Duration {
	w.mu.Lock()
	s := slices.Clone(w.ring)
	w.mu.Unlock()
	slices.Sort(s)
	return s
}

// tally counts reasons.
type tally struct {
	mu sync.Mutex
	m  map[string]int
}

func newTally() *tally { return &tally{m: map[string]int{}} }

func (t *tally) add(why string) {
	t.mu.Lock()
	t.m[why]++
	t.mu.Unlock()
}

func (t *tally) snapshot() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.m)
}

// codeTotals are requests by endpoint and status over a whole crowd run.
// The Recorder keeps every latency; a crowd runs for hours, so its
// recorder is drained into these counts and emptied every 10 s.
type codeTotals struct {
	mu sync.Mutex
	m  map[string]map[int]int
}

func newCodeTotals() *codeTotals { return &codeTotals{m: map[string]map[int]int{}} }

// take moves rec's counts into t and empties rec.
func (t *codeTotals) take(rec *measure.Recorder) {
	codes := rec.Drain()
	t.mu.Lock()
	defer t.mu.Unlock()
	for ep, c := range codes {
		if t.m[ep] == nil {
			t.m[ep] = map[int]int{}
		}
		for code, n := range c {
			t.m[ep][code] += n
		}
	}
}

func (t *codeTotals) snapshot() map[string]map[int]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]map[int]int, len(t.m))
	for ep, c := range t.m {
		out[ep] = maps.Clone(c)
	}
	return out
}
