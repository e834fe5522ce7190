package adaptive

import (
	"math"
	"sync"
	"time"
)

// PoolGauge is what the pool gate reads of the database pool (pgstore.Store
// has it): the connections held or waited for right now and the pool's
// size, beside PoolStats' cumulative figures and the releases so far.
type PoolGauge interface {
	PoolStats
	Busy() (busy, size int)
	Releases() int64
}

// The pool gate's constants.
const (
	// gatePeriod is how often the gate learns: its gain and the mean hold
	// from the pool's figures since the last time.
	gatePeriod = 500 * time.Millisecond
	// gateWait: a mean acquire wait above it over a period means the
	// gate let too many through; the gain falls.
	gateWait = time.Millisecond
	// gateBusy: a gate that bound while the pool was less busy than this,
	// with nobody waiting, let too few through; the gain rises.
	gateBusy = 0.9
	// The gain's bounds and steps. Above 1 it stands for the admitted
	// users who order later than the next tick (polling clients learn of
	// their turn at their next poll, some shoppers think first) and for
	// other instances' pools behind the same load balancer, whose free
	// connections this instance does not see.
	gainMin, gainMax = 1.0, 8.0
	gainUp, gainDown = 1.1, 0.8
	// rateShare caps one tick's admissions at this share of what the pool
	// completes in a tick (size ÷ mean hold × tick): users admitted while
	// connections are free but who order seconds later (polling clients)
	// would otherwise pile up and reach the pool together.
	rateShare = 1.1
)

// PoolGate is the fast half of adaptive admission. The limit (NextLimit,
// once a window) bounds how many users hold a slot; the gate bounds, every
// admission tick, how many of them may be admitted now: gain × the pool's
// free connections, at most rateShare × the orders the pool completes in a
// tick. The users an admission tick lets in order within milliseconds
// (those told over SSE or WebSocket), so a tick that admits more than the
// pool has free queues them for a connection; a window's step comes
// seconds too late for that, the gate does not.
//
// The gain learns, every gatePeriod, how many admissions it takes to fill
// a free connection: it falls ×0.8 (to 1) when acquires waited on average
// more than gateWait, and rises ×1.1 (to 8) when the gate bound (a room was
// allowed fewer than it could admit) while the pool was under 90 % busy
// with nobody waiting. One tick's budget is shared by every adaptive room
// this instance runs; rooms in fixed mode pass it by (admission.Admitter).
//
// It is safe for concurrent use (admission.Gate).
type PoolGate struct {
	pool     PoolGauge
	interval time.Duration

	mu     sync.Mutex
	budget int
	gain   float64
	bound  bool          // a run was allowed fewer than it could admit, this period
	hold   time.Duration // mean hold per release over the last period (0: not measured)
	at     time.Time     // the period's start (zero: not started)
	mark   gateMark      // the pool's figures at its start
	gated  int64         // runs the gate bound, all time
}

// gateMark is the pool's cumulative figures at one time, and its size.
type gateMark struct {
	acquires, releases int64
	wait, held         time.Duration
	size               int
}

// NewPoolGate returns the gate of pool for admission ticks every interval.
func NewPoolGate(pool PoolGauge, interval time.Duration) *PoolGate {
	return &PoolGate{pool: pool, interval: interval, gain: gainMin}
}

// Refill sets the budget of the tick that starts at now, learning first
// when a period has passed.
func (g *PoolGate) Refill(now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.at.IsZero():
		g.at, g.mark = now, g.read()
	case now.Sub(g.at) >= gatePeriod:
		g.learn(now)
	}
	busy, size := g.pool.Busy()
	b := math.Ceil(g.gain * float64(size-busy))
	if g.hold > 0 {
		b = min(b, math.Ceil(rateShare*float64(size)*float64(g.interval)/float64(g.hold)))
	}
	g.budget = int(max(b, 0))
}

// read takes the pool's cumulative figures.
func (g *PoolGate) read() gateMark {
	acq, wait := g.pool.AcquireStats()
	held, size := g.pool.HoldStats()
	return gateMark{acquires: acq, releases: g.pool.Releases(), wait: wait, held: held, size: size}
}

// learn updates the mean hold and the gain from the period that ends at
// now, and starts the next one.
func (g *PoolGate) learn(now time.Time) {
	cur := g.read()
	size := cur.size
	acq, rel := cur.acquires-g.mark.acquires, cur.releases-g.mark.releases
	wait, held := cur.wait-g.mark.wait, cur.held-g.mark.held
	g.hold = 0 // an idle period forgets the hold: no rate cap until measured again
	if rel > 0 {
		g.hold = held / time.Duration(rel)
	}
	busy := 0.0
	if span := now.Sub(g.at); size > 0 && span > 0 {
		busy = float64(held) / (float64(size) * float64(span))
	}
	switch {
	case acq > 0 && wait > gateWait*time.Duration(acq):
		g.gain = max(gainMin, g.gain*gainDown)
	case g.bound && busy < gateBusy:
		g.gain = min(gainMax, g.gain*gainUp)
	}
	g.at, g.mark, g.bound = now, cur, false
}

// Take returns how many of n admissions the tick's budget allows, and
// takes them from it.
func (g *PoolGate) Take(n int) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := max(min(n, g.budget), 0)
	g.budget -= m
	return m
}

// Done ends a run that asked for n admissions, was allowed allowed and
// admitted used: what it did not use goes back to the budget, and a run
// that used all it was allowed, fewer than it asked for, is one the gate
// bound.
func (g *PoolGate) Done(n, allowed, used int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.budget += max(allowed-used, 0)
	if allowed < n && used >= allowed {
		g.bound = true
		g.gated++
	}
}

// GateStats is the gate's state for the metrics.
type GateStats struct {
	Gain  float64
	Hold  time.Duration // mean hold of the last period (0: not measured)
	Gated int64         // runs the gate bound, all time
}

// Stats returns the gate's state.
func (g *PoolGate) Stats() GateStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return GateStats{Gain: g.gain, Hold: g.hold, Gated: g.gated}
}
