package estimate

import (
	"math"
	"sort"
	"time"
)

// Sample is one reading of a room, taken about once a second. The counters
// are the room's all-time totals; the estimator takes differences.
type Sample struct {
	At       time.Time
	Target   int64         // targetActive now
	Active   int64         // slots held now
	Waiting  int64         // users in the queue now
	EntryTTL time.Duration // the room's entry window
	// Halted: nobody is admitted (paused, closed, not open yet).
	Halted bool

	Admitted int64 // users admitted
	Expired  int64 // admissions whose window ended unused
	// Departed counts the waiting users who left or were dropped as idle,
	// except those the admission had passed over (Passed counts them).
	Departed int64
	// Passed counts the absent users the admission passed over (each once):
	// PassedWaiting of them wait still, at the front of the line, in the
	// position of everyone behind them, and nobody waits for them.
	Passed, PassedWaiting int64
	// Holds counts the slots freed by an order that ended, and HoldTime is
	// their total time from admission to release.
	Holds    int64
	HoldTime time.Duration

	// Remaining[i] counts the active slots whose deadline is between i and
	// i+1 Bins from now: an unused entry window's end (admission + TTL), or
	// an order in flight's allowance.
	Remaining []int64
	Bin       time.Duration

	// Prior stands in for what the room has not measured yet (see Prior).
	Prior Prior
}

// Prior is what a room expects before it has measured its own figures:
// those it measured in its last sale, or an operator's expectation. A
// forecast that uses any of it is Provisional.
type Prior struct {
	// Hold is the expected admission-to-release time of an order (0: none
	// expected).
	Hold time.Duration
	// NoShow is the expected share of admitted users who never order,
	// meaningful when NoShowKnown; without it a forecast that needs a
	// prior takes AssumedNoShow.
	NoShow      float64
	NoShowKnown bool
	// Absent is the expected share of users absent when the admission
	// reaches them (passed over), meaningful when AbsentKnown; without it
	// a forecast takes none until the room has measured its own.
	Absent      float64
	AbsentKnown bool
}

// AssumedNoShow is the no-show share a provisional forecast takes when
// neither the room nor its prior knows one (an operator's expectation of
// the hold alone): one in ten, what shoppers who were present when
// admitted leave unused in the load tool's crowd. Taking none would make
// every provisional estimate short, the error a waiting shopper minds.
const AssumedNoShow = 0.1

// Known reports whether p can stand in for a room's measurements: it
// needs at least the hold.
func (p Prior) Known() bool { return p.Hold > 0 }

// Measurement windows and minimum counts (see the package comment).
const (
	holdWindow     = 10 * time.Second
	holdSmoothing  = 8 * time.Second
	holdMaxWindow  = 2 * time.Minute
	minHolds       = 20
	departWindow   = time.Minute
	minDeparts     = 20
	resolvedWindow = time.Minute
	minCohort      = 10
	minTau         = 5 * time.Second
	// keep is how long samples are kept beyond one entry window.
	keep = 5 * time.Minute
	// maxNoShow caps p: with every admitted user a no-show the hold is
	// irrelevant and the rate is T ÷ TTL.
	maxNoShow = 1.0
)

// Why an estimate is withheld (Forecast.Why).
const (
	WhyHalted    = "halted"    // paused, closed or not open yet
	WhyNobody    = "nobody"    // targetActive is 0
	WhyMeasuring = "measuring" // too little measured yet
)

// Estimator keeps a room's recent samples and makes its forecast.
type Estimator struct {
	// ring holds the counters of the samples of about the last entry
	// window and a few minutes (at most maxRing: older ones thinned), the
	// newest last; last is the newest sample whole.
	ring []counters
	last Sample
	// fc is the last forecast: samples closer together than sampleEvery (a
	// hub re-reads a busy room many times a second) reuse it.
	fc Forecast
	// hold is h smoothed (exponentially, time constant holdSmoothing) as
	// of holdAt; zero until first measured.
	hold   time.Duration
	holdAt time.Time
	// holdOwn and pOwn: h and p have been measured from what this
	// estimator saw (not only the room's all-time figures, which may be
	// a past sale's).
	holdOwn, pOwn bool
	// p is the no-show share smoothed the same way (pOK: measured once,
	// so a thin second — few users of the right age — keeps the last
	// value instead of withholding the estimate again).
	p   float64
	pOK bool
	pAt time.Time
	// frozenDep counts the departures seen between two samples of a room
	// that admitted nobody (halted, or targetActive 0): d is measured
	// against admissions, and while they stop, departures alone would
	// inflate it (a pause; the users a finished sale leaves behind).
	frozenDep int64
	// emptyAt is when the room was first seen empty (nobody waiting,
	// active or admitted since) in the current stretch; zero: not empty.
	emptyAt time.Time
}

// emptyFor: a room empty this long — nobody waiting, nobody active, nobody
// admitted — has no sale under way. Its estimator forgets what it
// measured: the next sale starts from the room's prior (what it kept of
// the last sale while people waited, or the operator's expectation),
// marked provisional, as on an instance that has just started, instead of
// from the figures of the last sale's last slots.
const emptyFor = 5 * time.Second

// counters are what the estimator keeps of a past sample.
type counters struct {
	At                                         time.Time
	Admitted, Expired, Departed, Holds, Passed int64
	HoldTime                                   time.Duration
	// Departed counts only the departures while the room admitted
	// (Estimator.frozenDep); rawDeparted is the sample's own count.
	rawDeparted int64
}

// maxRing bounds the samples kept: a long entry window is covered at a
// coarser pace (about 3 s a sample for a 3 h window).
const maxRing = 4096

// sampleEvery is the least time between two samples kept, and between two
// forecasts: the measurements are per second.
const sampleEvery = time.Second

// Observe adds s (newer than every sample before it) and returns the
// forecast from the samples so far.
func (e *Estimator) Observe(s Sample) Forecast {
	if n := len(e.ring); n > 0 {
		last := e.ring[n-1]
		switch {
		case s.Admitted < last.Admitted || s.Expired < last.Expired || s.Holds < last.Holds || s.Departed < last.rawDeparted ||
			s.Passed < last.Passed:
			e.ring, e.hold, e.pOK = e.ring[:0], 0, false // the room was removed and made anew
			e.holdOwn, e.pOwn, e.frozenDep = false, false, 0
		case s.At.Sub(last.At) < sampleEvery:
			return e.fc // too soon (or out of order): the last forecast stands
		case frozen(s) || frozen(e.last):
			e.frozenDep += s.Departed - last.rawDeparted
		}
		switch {
		case s.Waiting > 0 || s.Active > 0 || s.Admitted != last.Admitted:
			e.emptyAt = time.Time{}
		case e.emptyAt.IsZero():
			e.emptyAt = last.At
		case s.At.Sub(e.emptyAt) >= emptyFor:
			e.ring, e.hold, e.pOK = e.ring[:0], 0, false // no sale under way: start anew
			e.holdOwn, e.pOwn, e.frozenDep = false, false, 0
		}
	}
	e.last = s
	e.ring = append(e.ring, counters{At: s.At, Admitted: s.Admitted, Expired: s.Expired, Departed: s.Departed - e.frozenDep,
		Holds: s.Holds, Passed: s.Passed, HoldTime: s.HoldTime, rawDeparted: s.Departed})
	horizon := s.At.Add(-(s.EntryTTL + resolvedWindow + keep))
	i := sort.Search(len(e.ring), func(i int) bool { return e.ring[i].At.After(horizon) })
	if i > 0 && i > len(e.ring)/2 {
		e.ring = append(e.ring[:0], e.ring[i:]...)
	}
	if len(e.ring) > maxRing { // thin the older half: every other sample
		half := len(e.ring) / 2
		k := 0
		for j := 0; j < half; j += 2 {
			e.ring[k] = e.ring[j]
			k++
		}
		e.ring = append(e.ring[:k], e.ring[half:]...)
	}
	e.fc = e.forecast()
	return e.fc
}

// frozen reports whether s's room admitted nobody: halted or
// targetActive 0.
func frozen(s Sample) bool { return s.Halted || s.Target <= 0 }

// at returns the newest sample taken at or before t, or false when every
// sample is newer.
func (e *Estimator) at(t time.Time) (counters, bool) {
	i := sort.Search(len(e.ring), func(i int) bool { return e.ring[i].At.After(t) })
	if i == 0 {
		return counters{}, false
	}
	return e.ring[i-1], true
}

// forecast makes the forecast from the newest sample.
func (e *Estimator) forecast() Forecast {
	s := e.last
	f := Forecast{At: s.At}
	switch {
	case s.Halted:
		f.Why = WhyHalted
		return f
	case s.Target <= 0:
		f.Why = WhyNobody
		return f
	}
	h, okH, pastH := e.smoothHold(s)
	// τ: users admitted longer ago are taken as no longer deciding; at most
	// a quarter window, so that a slow room (orders queued under load)
	// still measures its no-shows within a minute or so
	tau := min(max(3*h, minTau), max(s.EntryTTL/4, minTau))
	if !okH {
		tau = max(minTau, s.EntryTTL/4)
	}
	p, okP, pastP := e.smoothNoShow(s, tau)
	if okP && !okH && p >= maxNoShow {
		h, okH = s.EntryTTL, true // nobody orders: the hold does not matter
	}
	// The room's all-time figures (a past sale's, until this estimator
	// has measured the room itself) are provisional too, and the prior
	// comes before them: it is this sale's expectation, or the last sale's
	// own figures rather than a mean over every sale.
	f.Provisional = (okH && pastH) || (okP && pastP)
	if (!okH || pastH || !okP || pastP) && s.Prior.Known() {
		// Not measured yet: the prior stands in for what is missing, and
		// the forecast says so; the first measurement replaces it.
		f.Provisional = true
		if !okH || pastH {
			h, okH = s.Prior.Hold, true
			tau = min(max(3*h, minTau), max(s.EntryTTL/4, minTau))
		}
		switch {
		case (!okP || pastP) && s.Prior.NoShowKnown:
			p, okP = min(max(s.Prior.NoShow, 0), maxNoShow), true
		case !okP:
			p, okP = AssumedNoShow, true
		}
	}
	if !okH || !okP {
		f.Why = WhyMeasuring
		return f
	}
	f.Known, f.NoShow, f.Hold, f.Depart = true, p, h, e.depart(s)
	f.Absent, f.passedWaiting = e.absent(s), max(s.PassedWaiting, 0)
	f.step, f.cum, f.steady = simulate(s, p, h, tau, e.admissions(s.At, youngSpan(s, tau)))
	return f
}

// youngSpan is how far back the bins that hold users admitted less than
// tau ago reach.
func youngSpan(s Sample, tau time.Duration) time.Duration {
	if s.Bin <= 0 {
		return 0
	}
	bins := (tau + s.Bin - 1) / s.Bin // from the youngest end
	return min(time.Duration(bins)*s.Bin, s.EntryTTL)
}

// admissions returns the admissions of the last span in one-second steps
// (adm[k]: admitted k…k+1 s before now), or nil when the samples do not
// reach back that far.
func (e *Estimator) admissions(now time.Time, span time.Duration) []float64 {
	n := int((span + time.Second - 1) / time.Second)
	if n == 0 || len(e.ring) == 0 || e.ring[0].At.After(now.Add(-time.Duration(n)*time.Second)) {
		return nil
	}
	out := make([]float64, n)
	prev := e.ring[len(e.ring)-1].Admitted
	for k := range n {
		c, _ := e.at(now.Add(-time.Duration(k+1) * time.Second))
		out[k] = float64(max(prev-c.Admitted, 0))
		prev = c.Admitted
	}
	return out
}

// smoothHold is h smoothed over time, so that the noise of a few dozen
// orders does not make estimates jump.
// past is true while the value is the room's all-time mean and this
// estimator has not yet measured the hold of recent orders itself.
func (e *Estimator) smoothHold(s Sample) (h time.Duration, ok, past bool) {
	h, ok, recent := e.measureHold(s)
	e.holdOwn = e.holdOwn || (ok && recent)
	switch {
	case !ok:
		return 0, false, false
	case e.hold == 0:
		e.hold = h
	case s.At.After(e.holdAt):
		a := 1 - math.Exp(-s.At.Sub(e.holdAt).Seconds()/holdSmoothing.Seconds())
		e.hold += time.Duration(a * float64(h-e.hold))
	}
	e.holdAt = s.At
	return e.hold, true, !e.holdOwn
}

// smoothNoShow is p smoothed over time (time constant holdSmoothing),
// the last value standing when too few users can be judged this time.
// past is true while the value is the room's all-time share and this
// estimator has not yet measured cohorts itself.
func (e *Estimator) smoothNoShow(s Sample, tau time.Duration) (p float64, ok, past bool) {
	p, ok, own := e.measureNoShow(s, tau)
	e.pOwn = e.pOwn || (ok && own)
	switch {
	case !ok:
		return e.p, e.pOK, e.pOK && !e.pOwn
	case !e.pOK:
		e.p, e.pOK = p, true
	case s.At.After(e.pAt):
		a := 1 - math.Exp(-s.At.Sub(e.pAt).Seconds()/holdSmoothing.Seconds())
		e.p += a * (p - e.p)
	}
	e.pAt = s.At
	return e.p, true, !e.pOwn
}

// measureHold measures h, the mean admission-to-release time of the orders that
// ended recently (recent), else of all the room's orders.
func (e *Estimator) measureHold(s Sample) (h time.Duration, ok, recent bool) {
	for i := len(e.ring) - 2; i >= 0; i-- {
		b := e.ring[i]
		age := s.At.Sub(b.At)
		if age > holdMaxWindow {
			break
		}
		if n := s.Holds - b.Holds; n >= minHolds && age >= holdWindow {
			return (s.HoldTime - b.HoldTime) / time.Duration(n), true, true
		}
	}
	if s.Holds >= minHolds {
		return s.HoldTime / time.Duration(s.Holds), true, false
	}
	return 0, false, false
}

// measureNoShow measures p (see the package comment) with users older than tau
// taken as deciders no more; own is false for the room's all-time share.
func (e *Estimator) measureNoShow(s Sample, tau time.Duration) (p float64, ok, own bool) {
	var unused, cohort float64
	ttl, oldest := s.EntryTTL, e.ring[0].At
	for i, c := range s.Remaining {
		// the bin's deadlines are i…i+1 Bins away: its users were
		// admitted lo…hi ago
		lo, hi := ttl-time.Duration(i+1)*s.Bin, ttl-time.Duration(i)*s.Bin
		if lo < tau || hi > ttl*3/4 || s.At.Add(-hi).Before(oldest) {
			continue
		}
		a, okA := e.at(s.At.Add(-lo))
		b, okB := e.at(s.At.Add(-hi))
		if !okA || !okB {
			continue
		}
		unused += float64(c)
		cohort += float64(a.Admitted - b.Admitted)
	}
	// Users admitted a window earlier: their no-shows have expired since
	// (over as long as the window, 10 s to a minute).
	w := min(max(ttl, 10*time.Second), resolvedWindow)
	if w0, ok := e.at(s.At.Add(-w)); ok {
		a, okA := e.at(s.At.Add(-ttl))
		b, okB := e.at(s.At.Add(-ttl - w))
		if okA && okB {
			unused += float64(s.Expired - w0.Expired)
			cohort += float64(a.Admitted - b.Admitted)
		}
	}
	if cohort >= minCohort {
		return min(max(unused/cohort, 0), maxNoShow), true, true
	}
	// An instance that joined a room mid-sale has not seen its cohorts:
	// the room's all-time share stands in.
	if first := e.ring[0]; first.Admitted > minCohort && s.Admitted >= 10*minCohort && s.At.Sub(oldest) < ttl {
		return min(float64(s.Expired)/float64(s.Admitted), maxNoShow), true, false
	}
	return 0, false, false
}

// depart measures d over the last minute (all-time while the estimator has
// seen too little), capped at 0.9, leaving out the departures it saw while
// the room admitted nobody.
func (e *Estimator) depart(s Sample) float64 {
	now := e.ring[len(e.ring)-1] // s's counters, departures while frozen left out
	d, _ := e.againstAdmitted(s, now.Departed, func(c counters) int64 { return c.Departed })
	return d
}

// absent measures a, the share of the users admission reached in the
// last minute (all-time while the estimator has seen too little) that it
// found absent and passed over, capped at 0.9; before the room has
// passed or admitted enough, the prior's share, else 0. A room without
// presence-aware admission passes nobody: a is 0, and its absent users
// are admitted and counted as no-shows instead.
func (e *Estimator) absent(s Sample) float64 {
	a, seen := e.againstAdmitted(s, s.Passed, func(c counters) int64 { return c.Passed })
	if seen < minDeparts && s.Prior.AbsentKnown {
		return min(max(s.Prior.Absent, 0), 0.9)
	}
	return a
}

// againstAdmitted is n ÷ (n + admitted), n a count of s (now) and of each
// sample kept (of), over the last minute when at least minDeparts were
// counted there, else all-time, capped at 0.9; seen is n + admitted over
// the span it used.
func (e *Estimator) againstAdmitted(s Sample, n int64, of func(counters) int64) (share float64, seen int64) {
	adm := s.Admitted
	if b, ok := e.at(s.At.Add(-departWindow)); ok && n-of(b)+s.Admitted-b.Admitted >= minDeparts {
		n, adm = n-of(b), s.Admitted-b.Admitted
	}
	seen = max(n, 0) + max(adm, 0)
	if n <= 0 {
		return 0, seen
	}
	return min(float64(n)/float64(n+max(adm, 0)), 0.9), seen
}

// Forecast is a room's expected admissions from one sample on. The zero
// Forecast is unknown.
type Forecast struct {
	At    time.Time // the sample's time
	Known bool
	Why   string // why not Known: WhyHalted, WhyNobody, WhyMeasuring
	// Provisional (Known only): the forecast stands on the room's prior
	// (Sample.Prior) or its all-time figures (a past sale's) for the hold,
	// the no-show share or both, because this estimator has not measured
	// them in the room yet.
	Provisional bool

	NoShow float64       // p
	Hold   time.Duration // h
	Depart float64       // d
	Absent float64       // a: the share of users reached found absent

	// passedWaiting: users passed over who wait still, at the front
	passedWaiting int64

	step   time.Duration
	cum    []float64 // cum[k]: admissions expected by k steps from At
	steady float64   // admissions a second past the horizon
}

// Rate is the long-run admission rate the forecast settles at, users a
// second (0 when not Known).
func (f Forecast) Rate() float64 { return f.steady }

// ETA returns the wait until position (1-based) is admitted, in whole
// seconds rounded up: at least 1, except 0 for a position the free slots
// admit at once (the next admission run, a tick away); ok is false when
// the forecast is not Known. Of the users ahead, those passed over
// already are not waited for, a share d will leave and a share a will be
// absent when reached.
func (f Forecast) ETA(position int64) (secs int64, ok bool) {
	if !f.Known || len(f.cum) == 0 {
		return 0, false
	}
	// a passed-over user who is back is admitted at the next run
	need := float64(max(position-f.passedWaiting, 1)) * (1 - f.Depart) * (1 - f.Absent)
	n := len(f.cum)
	var t float64
	switch k := sort.SearchFloat64s(f.cum, need); {
	case k == 0:
		return 0, true // admitted by the free slots at once
	case k < n:
		frac := 1.0
		if a := f.cum[k] - f.cum[k-1]; a > 0 {
			frac = (need - f.cum[k-1]) / a
		}
		t = (float64(k-1) + frac) * f.step.Seconds()
	case f.steady > 0:
		t = float64(n-1)*f.step.Seconds() + (need-f.cum[n-1])/f.steady
	default:
		return 0, false
	}
	return max(1, int64(math.Ceil(t))), true
}
