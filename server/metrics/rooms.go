package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Options bound the per-room series. The zero value takes the defaults.
type Options struct {
	// QuietAfter: a room's series are removed once it has had no activity
	// here (an admission run of this instance's, an enter through it) for
	// this long; DefaultQuietAfter when 0.
	QuietAfter time.Duration
	// MaxRooms: at most this many rooms have series at once; a room
	// active beyond it gets none (counted in waitingroom_rooms_left_out)
	// until a room with series goes quiet. DefaultMaxRooms when 0.
	MaxRooms int
	// Now is the clock (time.Now when nil): the tests drive it.
	Now func() time.Time
}

const (
	// DefaultQuietAfter is Options.QuietAfter's default.
	DefaultQuietAfter = 10 * time.Minute
	// DefaultMaxRooms is Options.MaxRooms's default: about 18 series a
	// room, so at most some 18,000 room series per instance.
	DefaultMaxRooms = 1000
)

// sweepEvery is how often the quiet rooms are looked for: a tenth of
// QuietAfter, between a second and a minute. A quiet room's series go
// between QuietAfter and QuietAfter + sweepEvery after its last activity.
func (o Options) sweepEvery() time.Duration {
	return min(max(o.QuietAfter/10, time.Second), time.Minute)
}

// rooms holds every room-labelled vector, the totals across rooms and the
// rooms seen recently. It is one collector: a scrape first drops the
// rooms gone quiet (in memory, at most once per sweepEvery, the same
// check an observation makes), then collects what is left. Every change
// of a room's series happens under mu, so a series is never created for
// a room the sweep has just dropped and left behind untracked.
type rooms struct {
	o     Options
	every time.Duration
	mu    sync.Mutex
	seen  map[string]*roomSeen
	nSer  int // rooms in seen with series
	swept time.Time
	sumW  int64 // waiting, summed over the rooms run here
	sumA  int64 // active, summed likewise
	vecs  []vec

	// The rooms' series (labelled by room).
	waiting, active, target, paused, limit *prometheus.GaugeVec
	admitted, entered, expired, abandoned  *prometheus.CounterVec
	passedOver                             *prometheus.CounterVec
	etaError, etaJudged, etaLast           *prometheus.GaugeVec
	sigOrders, sigErrorRate, sigP90        *prometheus.GaugeVec
	sigBaseline, sigPoolWait               *prometheus.GaugeVec
	limitChanges                           *prometheus.CounterVec

	// The totals across rooms (always present) and the bound's own.
	totWaiting, totActive    prometheus.Gauge
	totAdmitted, totEntered  prometheus.Counter
	totExpired, totAbandoned prometheus.Counter
	totPassedOver            prometheus.Counter
	withSeries, leftOut      prometheus.Gauge
	totals                   []prometheus.Collector
}

// vec is a room-labelled vector: what the sweep needs of it.
type vec interface {
	prometheus.Collector
	DeleteLabelValues(...string) bool
	DeletePartialMatch(prometheus.Labels) int
}

// roomSeen is what is kept of a room with recent activity here.
type roomSeen struct {
	at     time.Time // its last activity
	series bool      // it has series (else it is left out)
	// waiting and active are its last admission run's here, in the totals.
	waiting, active int64
}

func newRooms(o Options) *rooms {
	if o.QuietAfter <= 0 {
		o.QuietAfter = DefaultQuietAfter
	}
	if o.MaxRooms <= 0 {
		o.MaxRooms = DefaultMaxRooms
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	r := &rooms{o: o, every: o.sweepEvery(), seen: map[string]*roomSeen{}}
	gv := func(name, help string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"room"})
		r.vecs = append(r.vecs, g)
		return g
	}
	cv := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append([]string{"room"}, labels...))
		r.vecs = append(r.vecs, c)
		return c
	}
	g := func(name, help string) prometheus.Gauge {
		m := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
		r.totals = append(r.totals, m)
		return m
	}
	c := func(name, help string) prometheus.Counter {
		m := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		r.totals = append(r.totals, m)
		return m
	}

	r.waiting = gv("waitingroom_queue_waiting", "People waiting in the room's queue (as of this instance's last admission run; set by the instance that runs the room).")
	r.active = gv("waitingroom_active", "Admitted users plus orders in flight (as of this instance's last admission run; set by the instance that runs the room).")
	r.target = gv("waitingroom_target_active", "The room's targetActive.")
	r.paused = gv("waitingroom_room_paused", "1 while the operator has paused the room (as of this instance's last admission run).")
	r.admitted = cv("waitingroom_admitted_total", "Users admitted by this instance's admission runs.")
	r.entered = cv("waitingroom_entered_total", "New tickets issued through this instance.")
	r.expired = cv("waitingroom_entry_expired_total", "Admissions whose entry window ended unused (no-shows), pruned by this instance.")
	r.abandoned = cv("waitingroom_abandoned_total", "Waiting users removed for neither polling nor holding a stream for the idle timeout (counted by the instance whose admission run removed them).")
	r.passedOver = cv("waitingroom_passed_over_total", "Absent waiting users this instance's admission runs passed over (presence-aware admission), each counted once, when the first user behind them was admitted; they keep their place until seen again or dropped as idle.")
	r.etaError = gv("waitingroom_eta_error_ratio",
		"Median |ETA − wait| ÷ wait of the estimates shown to the room's last in line and to the one in the middle over the last hour, judged once they had their turn (0 until one is: see waitingroom_eta_judged).")
	r.etaJudged = gv("waitingroom_eta_judged", "Estimates judged for waitingroom_eta_error_ratio (the last hour's, recorded once a second).")
	r.etaLast = gv("waitingroom_eta_last_in_line_seconds",
		"The ETA the room's last in line is shown now: the server's own estimate (the one polls and streams carry), as recorded in the room's history once a second by the instance that runs it; absent while the estimate is withheld (paused, closed, measuring) or nobody waits.")
	r.limit = gv("waitingroom_admission_limit", "The admission limit in force (targetActive), set by the operator or, in adaptive mode, by the limit controller.")
	r.sigOrders = gv("waitingroom_adaptive_window_orders", "Orders finished in the last evaluated signals window, all instances.")
	r.sigErrorRate = gv("waitingroom_adaptive_error_ratio", "Share of the last window's orders that failed for an infrastructure reason (DB down, timeout).")
	r.sigP90 = gv("waitingroom_adaptive_order_p90_seconds", "Order latency p90 of the last window, all instances.")
	r.sigBaseline = gv("waitingroom_adaptive_order_p90_baseline_seconds", "Long-run order latency p90 (EWMA of healthy windows' p90s).")
	r.sigPoolWait = gv("waitingroom_adaptive_pool_wait_seconds", "Mean Postgres pool acquire wait per acquire in the last window.")
	r.limitChanges = cv("waitingroom_admission_limit_changes_total", "Changes of the adaptive admission limit made by this instance's controller, by reason.", "reason")

	r.totWaiting = g("waitingroom_rooms_waiting", "People waiting, summed over the rooms this instance runs (their last admission run's): summed over the instances, everyone waiting.")
	r.totActive = g("waitingroom_rooms_active", "Admitted users plus orders in flight, summed over the rooms this instance runs: summed over the instances, the cluster's.")
	r.totAdmitted = c("waitingroom_rooms_admitted_total", "Users admitted by this instance, all rooms (waitingroom_admitted_total without the bound on rooms).")
	r.totEntered = c("waitingroom_rooms_entered_total", "New tickets issued through this instance, all rooms.")
	r.totExpired = c("waitingroom_rooms_entry_expired_total", "Admissions whose entry window ended unused, pruned by this instance, all rooms.")
	r.totAbandoned = c("waitingroom_rooms_abandoned_total", "Waiting users removed as idle by this instance's admission runs, all rooms.")
	r.totPassedOver = c("waitingroom_rooms_passed_over_total", "Absent waiting users passed over by this instance's admission runs (each once), all rooms.")
	r.withSeries = g("waitingroom_rooms_with_series", "Rooms with per-room series here: active here within the quiet time, at most the rooms cap.")
	r.leftOut = g("waitingroom_rooms_left_out", "Rooms active here within the quiet time that have no per-room series because the rooms cap is reached; the totals (waitingroom_rooms_*) count them.")
	return r
}

// Describe sends every series' and total's description.
func (r *rooms) Describe(ch chan<- *prometheus.Desc) {
	for _, v := range r.vecs {
		v.Describe(ch)
	}
	for _, t := range r.totals {
		t.Describe(ch)
	}
}

// Collect drops the rooms gone quiet if a sweep is due, then collects.
func (r *rooms) Collect(ch chan<- prometheus.Metric) {
	r.mu.Lock()
	r.sweepLocked(r.o.Now())
	r.mu.Unlock()
	for _, v := range r.vecs {
		v.Collect(ch)
	}
	for _, t := range r.totals {
		t.Collect(ch)
	}
}

// roomLocked returns what is kept of room after a sweep if due: with
// activity, a record (made if needed, with series when it has them or
// can have them now, under MaxRooms) whose activity time is now; without,
// the record if there is one, else nil. Called with mu held.
func (r *rooms) roomLocked(room string, activity bool) *roomSeen {
	now := r.o.Now()
	r.sweepLocked(now)
	s := r.seen[room]
	if !activity {
		return s
	}
	if s == nil {
		s = &roomSeen{}
		r.seen[room] = s
	}
	s.at = now
	if !s.series && r.nSer < r.o.MaxRooms {
		s.series = true
		r.nSer++
	}
	r.countsLocked()
	return s
}

// labelledLocked reports whether room has series, without counting it
// as activity. Called with mu held.
func (r *rooms) labelledLocked(room string) bool {
	s := r.roomLocked(room, false)
	return s != nil && s.series
}

// sweepLocked drops the rooms quiet for QuietAfter, at most once per
// sweepEvery. Called with mu held.
func (r *rooms) sweepLocked(now time.Time) {
	if now.Sub(r.swept) < r.every {
		return
	}
	r.swept = now
	for room, s := range r.seen {
		if now.Sub(s.at) >= r.o.QuietAfter {
			r.dropLocked(room, s)
		}
	}
	r.countsLocked()
}

// dropLocked removes room's series and takes it out of the totals.
// Called with mu held.
func (r *rooms) dropLocked(room string, s *roomSeen) {
	r.sumW -= s.waiting
	r.sumA -= s.active
	r.totWaiting.Set(float64(r.sumW))
	r.totActive.Set(float64(r.sumA))
	if s.series {
		for _, v := range r.vecs {
			v.DeleteLabelValues(room) // a hash lookup, where a partial match walks every series
		}
		r.limitChanges.DeletePartialMatch(prometheus.Labels{"room": room})
		r.nSer--
	}
	delete(r.seen, room)
}

// countsLocked sets the bound's own gauges. Called with mu held.
func (r *rooms) countsLocked() {
	r.withSeries.Set(float64(r.nSer))
	r.leftOut.Set(float64(len(r.seen) - r.nSer))
}

// forget drops room at once (its runner moved elsewhere).
func (r *rooms) forget(room string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.seen[room]; s != nil {
		r.dropLocked(room, s)
		r.countsLocked()
	}
}
