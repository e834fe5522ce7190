package adaptive

import (
	"testing"
	"time"
)

// gauge is a database pool's figures, set by the test.
type gauge struct {
	busy, size         int
	acquires, releases int64
	wait, held         time.Duration
}

func (p *gauge) AcquireStats() (int64, time.Duration) { return p.acquires, p.wait }
func (p *gauge) HoldStats() (time.Duration, int)      { return p.held, p.size }
func (p *gauge) Busy() (int, int)                     { return p.busy, p.size }
func (p *gauge) Releases() int64                      { return p.releases }
func (p *gauge) serve(n int64, hold, wait time.Duration) {
	p.acquires, p.releases, p.held, p.wait = p.acquires+n, p.releases+n, p.held+time.Duration(n)*hold, p.wait+time.Duration(n)*wait
}

// TestPoolGateBudget: a tick's budget is the pool's free connections (gain
// 1 at the start), shared by the runs of the tick; what a run does not use
// goes back; a full pool allows nobody.
func TestPoolGateBudget(t *testing.T) {
	p := &gauge{busy: 30, size: 40}
	g := NewPoolGate(p, 100*time.Millisecond)
	now := time.Unix(1000, 0)
	g.Refill(now)
	if got := g.Take(6); got != 6 {
		t.Fatalf("first run: allowed %d of 6, want 6 (10 connections free)", got)
	}
	if got := g.Take(8); got != 4 {
		t.Fatalf("second run: allowed %d of 8, want the 4 left", got)
	}
	g.Done(8, 4, 1) // admitted 1 of the 4: 3 go back
	if got := g.Take(10); got != 3 {
		t.Fatalf("third run: allowed %d, want the 3 given back", got)
	}
	p.busy = 45 // 40 held, 5 waiting
	g.Refill(now.Add(100 * time.Millisecond))
	if got := g.Take(10); got != 0 {
		t.Fatalf("with acquires waiting: allowed %d, want 0", got)
	}
}

// TestPoolGateLearns: the gain rises ×1.1 a period while the gate binds
// and the pool is under 90 % busy with nobody waiting, falls ×0.8 once
// acquires wait, never below 1; a measured hold caps a tick at 1.1 × what
// the pool completes in one; an idle period forgets it.
func TestPoolGateLearns(t *testing.T) {
	p := &gauge{busy: 20, size: 40}
	g := NewPoolGate(p, 100*time.Millisecond)
	now := time.Unix(1000, 0)
	g.Refill(now)
	// A period in which the gate bound, the pool ~50 % busy (1 s held
	// per 100 ms hold × 200 releases = 20 s of 40 s), nobody waiting.
	g.Done(30, 20, 20)
	p.serve(200, 100*time.Millisecond, 0)
	now = now.Add(time.Second)
	g.Refill(now)
	if st := g.Stats(); st.Gain < 1.09 || st.Gain > 1.11 || st.Hold != 100*time.Millisecond || st.Gated != 1 {
		t.Fatalf("after a bound, half-busy period: %+v, want gain 1.1, hold 100ms, 1 gated run", st)
	}
	// The cap: 1.1 × 40 connections ÷ 100 ms hold × 100 ms tick = 44;
	// gain 1.1 × 20 free = 22 is below it.
	if got := g.Take(100); got != 22 {
		t.Fatalf("allowed %d, want ceil(1.1 × 20 free) = 22", got)
	}
	// A slow database: hold 1 s, so the cap is ceil(1.1 × 40 × 0.1) = 5.
	p.busy = 0
	p.serve(20, time.Second, 0)
	now = now.Add(time.Second)
	g.Refill(now)
	if got := g.Take(100); got != 5 {
		t.Fatalf("hold 1 s: allowed %d, want the rate cap 5", got)
	}
	// Acquires waited 5 ms on average: the gain falls, not below 1.
	for range 5 {
		p.serve(20, time.Second, 5*time.Millisecond)
		now = now.Add(time.Second)
		g.Refill(now)
	}
	if st := g.Stats(); st.Gain != 1 {
		t.Fatalf("after periods of waiting: gain %v, want 1", st.Gain)
	}
	// An idle period (no releases): no hold, no cap; a free pool allows 40.
	now = now.Add(time.Second)
	g.Refill(now)
	if st, got := g.Stats(), g.Take(100); st.Hold != 0 || got != 40 {
		t.Fatalf("after an idle period: hold %v, allowed %d; want no hold and all 40", st.Hold, got)
	}
	// A bound period with the pool busy (95 %) does not raise the gain.
	g.Done(30, 20, 20)
	p.serve(380, 100*time.Millisecond, 0)
	now = now.Add(time.Second)
	g.Refill(now)
	if st := g.Stats(); st.Gain != 1 {
		t.Fatalf("bound with the pool 95 %% busy: gain %v, want it held at 1", st.Gain)
	}
}
