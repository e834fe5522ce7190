package estimate_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"waitingroom/queue/estimate"
)

// A simulated room, ticking every 100 ms like the admission loop, with
// shoppers like people: a log-normal time to decide, no-shows, some who
// stop waiting (dropped as idle later) — the synthetic series the
// estimator is tested on. Every draw comes from a seeded generator: a
// scenario is the same every run.

const (
	tick     = 100 * time.Millisecond
	inFlight = 10 * time.Second // an order in flight's allowance
	bin      = 5 * time.Second  // Sample.Remaining's bins
)

type shopper struct {
	arrive   time.Duration
	think    time.Duration
	noShow   bool
	abandon  time.Duration // stops waiting this long after arriving; 0 never
	admitted time.Duration // -1 while not admitted
	gone     bool          // left the queue without being admitted
	release  time.Duration // when an admitted shower's order ends
	deadline time.Duration // the slot's deadline (window end, or in-flight)
	consumed bool
	passed   bool // passed over by the admission (presence)
	shown    []shown
}

type shown struct {
	at  time.Duration
	eta int64
}

// scenario is a room's crowd and the changes made during the run.
type scenario struct {
	n           int
	over        time.Duration // arrivals spread evenly over this
	target      int64
	ttl         time.Duration
	thinkMedian time.Duration
	thinkSigma  float64
	noShows     float64
	abandons    float64
	idle        time.Duration // an abandon is dropped this long after
	// grace > 0: presence-aware admission, an abandon is absent this long
	// after and passed over (kept in line until dropped)
	grace time.Duration
	// blind: the samples do not say who was passed over (the estimator
	// before it counted them), to compare with
	blind bool
	order time.Duration // an order's own time
	seed  uint64
	// changes, applied when the run reaches At
	changes []change
	// prior: what the room expects before it has measured (Sample.Prior)
	prior estimate.Prior
}

type change struct {
	at       time.Duration
	target   int64         // >0: new targetActive
	slowdown time.Duration // added to every order started from now
	pause    int           // 1 pause, -1 resume
}

type room struct {
	sc       scenario
	now      time.Duration
	start    time.Time
	users    []*shopper
	queue    []*shopper // FIFO, arrived and waiting
	active   []*shopper
	next     int // next arrival
	target   int64
	slow     time.Duration
	paused   bool
	counters struct{ admitted, expired, departed, holds, passed int64 }
	holdTime time.Duration
	est      estimate.Estimator
	fc       estimate.Forecast
	// pausedSeen counts forecasts made while paused that were Known.
	pausedKnown int
	// provisional counts the Provisional forecasts, provisionalAfter those
	// made after a measured one.
	provisional, provisionalAfter int
	measured                      bool
	// lastMeasured is the last measured forecast made while shoppers
	// waited: what the room keeps of this sale for its next.
	lastMeasured estimate.Forecast
}

func newRoom(sc scenario) *room {
	rng := rand.New(rand.NewPCG(sc.seed, 7))
	r := &room{sc: sc, target: sc.target, start: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)}
	for i := range sc.n {
		u := &shopper{arrive: time.Duration(float64(sc.over) * float64(i) / float64(sc.n)), admitted: -1}
		u.think = time.Duration(float64(sc.thinkMedian) * math.Exp(sc.thinkSigma*rng.NormFloat64()))
		u.think = min(u.think, sc.ttl*8/10)
		u.noShow = rng.Float64() < sc.noShows
		if rng.Float64() < sc.abandons {
			u.abandon = time.Duration(rng.Float64() * float64(time.Minute))
		}
		r.users = append(r.users, u)
	}
	return r
}

// run ticks until everyone is admitted or gone (at most limit).
func (r *room) run(limit time.Duration) {
	for r.now = 0; r.now <= limit; r.now += tick {
		r.applyChanges()
		r.settle()
		r.drop()
		if !r.paused {
			r.admit()
		}
		r.arrive()
		if r.now%time.Second == 0 {
			r.observe()
		}
		if r.next == len(r.users) && len(r.queue) == 0 && len(r.active) == 0 {
			return
		}
	}
}

func (r *room) applyChanges() {
	for _, c := range r.sc.changes {
		if c.at != r.now {
			continue
		}
		if c.target > 0 {
			r.target = c.target
		}
		r.slow += c.slowdown
		switch c.pause {
		case 1:
			r.paused = true
		case -1:
			r.paused = false
		}
	}
}

// settle consumes tokens of shoppers done deciding and frees the slots of
// orders done and windows ended.
func (r *room) settle() {
	keep := r.active[:0]
	for _, u := range r.active {
		if !u.noShow && !u.consumed && r.now >= u.admitted+u.think {
			u.consumed = true
			u.deadline = r.now + inFlight
			u.release = r.now + r.sc.order + r.slow
		}
		switch {
		case u.consumed && r.now >= u.release:
			r.counters.holds++
			r.holdTime += r.now - u.admitted
		case r.now >= u.deadline:
			r.counters.expired++
		default:
			keep = append(keep, u)
		}
	}
	r.active = keep
}

// drop removes the waiting shoppers who stopped waiting an idle timeout ago.
func (r *room) drop() {
	keep := r.queue[:0]
	for _, u := range r.queue {
		if u.abandon > 0 && r.now >= u.arrive+u.abandon+r.sc.idle {
			u.gone = true
			if !u.passed { // a passed-over user was counted once, as passed
				r.counters.departed++
			}
			continue
		}
		keep = append(keep, u)
	}
	r.queue = keep
}

func (r *room) admit() {
	if r.sc.grace > 0 {
		r.admitPresent()
		return
	}
	for int64(len(r.active)) < r.target && len(r.queue) > 0 {
		u := r.queue[0]
		r.queue = r.queue[1:]
		u.admitted, u.deadline = r.now, r.now+r.sc.ttl
		if u.abandon > 0 && r.now >= u.arrive+u.abandon {
			u.noShow = true // the tab is closed: nobody orders
		}
		r.active = append(r.active, u)
		r.counters.admitted++
	}
}

// admitPresent admits like admit.lua with presence-aware admission: in
// line order, passing over those absent (abandoned a grace ago), who keep
// their place until the idle drop; each is counted passed once, when
// someone behind them is admitted.
func (r *room) admitPresent() {
	keep := r.queue[:0]
	var skipped []*shopper
	for _, u := range r.queue {
		switch {
		case int64(len(r.active)) >= r.target:
			keep = append(keep, u)
		case u.abandon > 0 && r.now >= u.arrive+u.abandon+r.sc.grace:
			keep = append(keep, u)
			skipped = append(skipped, u)
		default:
			for _, g := range skipped {
				if !g.passed {
					g.passed = true
					r.counters.passed++
				}
			}
			skipped = skipped[:0]
			u.admitted, u.deadline = r.now, r.now+r.sc.ttl
			r.active = append(r.active, u)
			r.counters.admitted++
		}
	}
	r.queue = keep
}

func (r *room) arrive() {
	for r.next < len(r.users) && r.users[r.next].arrive <= r.now {
		u := r.users[r.next]
		r.queue = append(r.queue, u)
		r.next++
		r.show(u, 1+int64(len(r.queue)-1))
	}
}

func (r *room) sample() estimate.Sample {
	s := estimate.Sample{At: r.start.Add(r.now), Target: r.target, Active: int64(len(r.active)), Waiting: int64(len(r.queue)), EntryTTL: r.sc.ttl,
		Halted: r.paused, Admitted: r.counters.admitted, Expired: r.counters.expired, Departed: r.counters.departed,
		Holds: r.counters.holds, HoldTime: r.holdTime, Bin: bin, Remaining: make([]int64, int(r.sc.ttl/bin)+1),
		Prior: r.sc.prior}
	if r.sc.blind {
		s.Departed += r.counters.passed // seen as departures, late
		return s
	}
	s.Passed = r.counters.passed
	for _, u := range r.queue {
		if u.passed {
			s.PassedWaiting++
		}
	}
	for _, u := range r.active { // bin i: deadlines (i, i+1] bins away, as snapshot.lua counts
		i := int((u.deadline-r.now+bin-1)/bin) - 1
		s.Remaining[min(max(i, 0), len(s.Remaining)-1)]++
	}
	return s
}

// observe feeds the estimator and shows every waiting shopper the ETA a
// poll would answer.
func (r *room) observe() {
	r.fc = r.est.Observe(r.sample())
	if r.paused && r.fc.Known {
		r.pausedKnown++
	}
	switch {
	case r.fc.Provisional:
		r.provisional++
		if r.measured {
			r.provisionalAfter++
		}
	case r.fc.Known:
		r.measured = true
		if len(r.queue) > 0 {
			r.lastMeasured = r.fc
		}
	}
	for i, u := range r.queue {
		r.show(u, int64(i+1))
	}
}

func (r *room) show(u *shopper, pos int64) {
	eta, ok := r.fc.ETA(pos)
	if !ok {
		eta = -1
	}
	u.shown = append(u.shown, shown{at: r.now, eta: eta})
}

// accuracy is how far the estimates shown were from the waits that
// remained (absolute percentage errors, waits under a second skipped).
type accuracy struct {
	first, all []float64 // sorted
	signed     []float64 // eta − real, seconds, of the first estimates, sorted
	firstAfter []time.Duration
	// after: the estimates shown from the given time on
	after func(t time.Duration) []float64
}

func (r *room) accuracy() accuracy {
	var a accuracy
	type pt struct {
		at  time.Duration
		ape float64
	}
	var pts []pt
	for _, u := range r.users {
		if u.admitted < 0 {
			continue
		}
		first := true
		for _, s := range u.shown {
			real := u.admitted - s.at
			if s.eta < 0 || real < time.Second {
				continue
			}
			ape := 100 * math.Abs(float64(time.Duration(s.eta)*time.Second-real)) / float64(real)
			if first {
				a.first = append(a.first, ape)
				a.firstAfter = append(a.firstAfter, s.at-u.arrive)
				a.signed = append(a.signed, (time.Duration(s.eta)*time.Second - real).Seconds())
				first = false
			}
			a.all = append(a.all, ape)
			pts = append(pts, pt{s.at, ape})
		}
	}
	slices.Sort(a.first)
	slices.Sort(a.all)
	slices.Sort(a.firstAfter)
	slices.Sort(a.signed)
	a.after = func(t time.Duration) []float64 {
		var out []float64
		for _, p := range pts {
			if p.at >= t {
				out = append(out, p.ape)
			}
		}
		slices.Sort(out)
		return out
	}
	return a
}

// pct is the nearest-rank percentile of sorted.
func pct[T int64 | float64 | time.Duration](sorted []T, p float64) T {
	if len(sorted) == 0 {
		var zero T
		return zero
	}
	k := int(math.Ceil(p*float64(len(sorted))/100)) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}
