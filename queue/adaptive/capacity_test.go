package adaptive_test

import (
	"math"
	"testing"
	"time"

	"waitingroom/queue/adaptive"
)

// A closed model of a room in front of a pool, for the capacity rule's
// tests: L admitted users each spend outside seconds between admission
// and their order's acquire (the push or poll that tells them, think
// time), then hold a connection hold seconds. The pool sustains at most
// pool ÷ hold orders a second, a hot row at most rowRate (every order
// waits for the row's lock while holding its connection), and users
// arrive at most demand a second (0: a backlog that never ends).
type model struct {
	pool                   float64
	outside, hold          float64 // seconds
	rowRate, demand        float64 // orders a second (0: no bound)
	window                 time.Duration
	errorRate              float64
	throughput, queue, use float64 // of the last window
}

// window is what a window at limit shows: Little's law on each station.
func (m *model) signals(limit int64) adaptive.Signals {
	l := float64(limit)
	x := l / (m.outside + m.hold) // the limit's bound
	bound := 1.0
	for _, c := range []float64{m.pool / m.hold, m.rowRate, m.demand} {
		if c > 0 && c < x {
			x = c
			if c == m.demand {
				bound = 0
			}
		}
	}
	active := l
	if bound == 0 {
		active = x * (m.outside + m.hold)
	}
	inDB := active - x*m.outside // holding a connection or queued for one
	busy := min(inDB, m.pool)
	m.throughput, m.queue, m.use = x, inDB-busy, busy/m.pool
	orders := int64(x * m.window.Seconds())
	wait := time.Duration(0)
	if x > 0 {
		wait = time.Duration(m.queue / x * float64(time.Second))
	}
	return adaptive.Signals{Window: m.window, Orders: orders, Errors: int64(m.errorRate * float64(orders)),
		P90: time.Duration((m.hold)*float64(time.Second)) + wait, PoolWait: wait,
		Utilization: m.use, Queue: m.queue, Active: active, Bound: bound}
}

// best is the highest throughput any limit reaches in the model.
func (m *model) best() float64 {
	b := m.pool / m.hold
	for _, c := range []float64{m.rowRate, m.demand} {
		if c > 0 {
			b = min(b, c)
		}
	}
	return b
}

// run steps the rule from limit for n windows and returns the limits.
func (m *model) run(limit int64, n int, r adaptive.Rule) []int64 {
	out := []int64{limit}
	for range n {
		limit, _ = adaptive.NextLimit(limit, limit, m.signals(limit), r)
		out = append(out, limit)
	}
	return out
}

// TestCapacityConverges: in each scenario of the issue, from a wrong
// start, within a few windows the limit gives at least 0.9 × the best
// throughput with (almost) nobody queued for the pool, and stays there.
func TestCapacityConverges(t *testing.T) {
	rule := adaptive.Rule{Min: 4, Max: 200, MinSamples: 20, Ceiling: 2 * time.Second}
	const win = 2 * time.Second
	for _, tt := range []struct {
		name    string
		m       model
		from    int64
		windows int // to converge
	}{
		// A 300 ms order delay with pool 40: 133 orders/s at most, from
		// a limit of 100 (60 admitted users queued for the pool).
		{"slowdown", model{pool: 40, outside: 0.08, hold: 0.3}, 100, 1},
		// The delay removed: the pool does 13,000 orders/s; the limit
		// must grow to serve the backlog (400/s arriving).
		{"recovery", model{pool: 40, outside: 0.25, hold: 0.003, demand: 400}, 48, 2},
		// Far too low a start with a fast database and 200 arrivals/s.
		{"too low", model{pool: 40, outside: 0.25, hold: 0.003, demand: 200}, 5, 4},
		// A hot row: every order holds its connection while it waits
		// for the row, 100 orders/s at most, whatever the concurrency.
		{"hot row", model{pool: 40, outside: 0.08, hold: 0.01, rowRate: 100}, 100, 2},
		// A cold cache warming: holds of 50 ms (the start), the limit
		// follows the pool, not a latency remembered from then.
		{"cold cache", model{pool: 40, outside: 0.1, hold: 0.05}, 20, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.m
			m.window = win
			limits := m.run(tt.from, 12, rule)
			for w := tt.windows; w < len(limits); w++ {
				m.signals(limits[w])
				if m.throughput < 0.9*m.best() || m.queue > 1 {
					t.Fatalf("window %d at limit %d: %.0f orders/s of %.0f, %.1f queued for the pool; limits %v",
						w, limits[w], m.throughput, m.best(), m.queue, limits)
				}
				if w > tt.windows+2 && limits[w] != limits[w-1] {
					t.Fatalf("still moving after window %d: limits %v", w-1, limits)
				}
			}
		})
	}
}

// TestCapacityCutsAtOnce: with the pool saturated and acquires queued,
// one window cuts the limit to below the concurrency the pool can use,
// and says pool_wait.
func TestCapacityCutsAtOnce(t *testing.T) {
	m := model{pool: 40, outside: 0.08, hold: 0.3, window: 2 * time.Second}
	rule := adaptive.Rule{Min: 4, Max: 200, MinSamples: 20}
	s := m.signals(100)
	next, reason := adaptive.NextLimit(100, 100, s, rule)
	// 133 orders/s, 10.7 users between admission and order, 89.3 in the
	// database's part: 40 holding a connection, 49.3 queued for one.
	// 0.95 × (100 − 49.3) ÷ 1 = 48.1
	if next != 48 || reason != adaptive.ReasonPoolWait {
		t.Fatalf("NextLimit(100) = %d %s, want 48 pool_wait (signals %+v)", next, reason, s)
	}
	if got := adaptive.Capacity(s); math.Abs(got-48.13) > 0.01 {
		t.Fatalf("Capacity = %.2f, want 48.13", got)
	}
}

func TestNextLimitCapacity(t *testing.T) {
	rule := adaptive.Rule{Min: 2, Max: 100, MinSamples: 10, Ceiling: time.Second, Pool: true}
	// A saturated room at limit 40 whose pool is 50 % busy.
	half := adaptive.Signals{Orders: 100, P90: 20 * time.Millisecond, Utilization: 0.5, Active: 40, Bound: 1}
	with := func(f func(*adaptive.Signals)) adaptive.Signals { s := half; f(&s); return s }
	for _, tt := range []struct {
		name          string
		limit, active int64
		sig           adaptive.Signals
		want          int64
		reason        string
	}{
		// 0.95 × 40 ÷ 0.5 = 76, but the pool is over half its target
		// busy: at most ×1.25
		{"grows toward the capacity", 40, 40, half, 50, adaptive.ReasonCapacity},
		// 0.95 × 40 ÷ 0.4 = 95, at most ×2 of a mostly idle pool
		{"grows fast while the pool is mostly idle", 40, 40, with(func(s *adaptive.Signals) { s.Utilization = 0.4 }), 80, adaptive.ReasonCapacity},
		{"no growth while acquires queue", 40, 40, with(func(s *adaptive.Signals) { s.Utilization = 0.4; s.Queue = 1 }), 40, adaptive.ReasonSteady},
		{"growth at most ×2", 40, 40, with(func(s *adaptive.Signals) { s.Utilization = 0.01 }), 80, adaptive.ReasonCapacity},
		{"growth of a small limit", 2, 2, with(func(s *adaptive.Signals) { s.Active = 2; s.Utilization = 0.01 }), 4, adaptive.ReasonCapacity},
		{"growth stops at max", 80, 80, with(func(s *adaptive.Signals) { s.Active = 80; s.Utilization = 0.01 }), 100, adaptive.ReasonCapacity},
		{"no growth when the limit did not bind", 40, 20, with(func(s *adaptive.Signals) { s.Active = 20; s.Bound = 0.3; s.Utilization = 0.2 }), 40, adaptive.ReasonUnderused},
		// 0.95 × 40 ÷ 0.93 = 40.9: within 5 %
		{"holds near the target utilization", 40, 40, with(func(s *adaptive.Signals) { s.Utilization = 0.93 }), 40, adaptive.ReasonSteady},
		// 0.95 × (40 − 10) ÷ 1 = 28.5
		{"queued acquires cut at once", 40, 40, with(func(s *adaptive.Signals) { s.Utilization = 1; s.Queue = 10 }), 28, adaptive.ReasonPoolWait},
		// 0.95 × (40 − 0.6) = 37.4: within 5 %, but acquires wait
		{"a small queue still cuts", 40, 40, with(func(s *adaptive.Signals) { s.Utilization = 1; s.Queue = 0.6 }), 37, adaptive.ReasonPoolWait},
		// 0.95 × 40 ÷ 1 = 38: within 5 %, nobody queued
		{"a full pool without a queue holds", 40, 40, with(func(s *adaptive.Signals) { s.Utilization = 1 }), 40, adaptive.ReasonSteady},
		// the room ran fewer than the limit (cut mid-window): 0.95 × 30 ÷ 1
		{"capacity below the limit cuts", 40, 30, with(func(s *adaptive.Signals) { s.Active = 30; s.Utilization = 1; s.Queue = 0.2 }), 28, adaptive.ReasonCapacity},
		{"the cut stops at min", 4, 4, with(func(s *adaptive.Signals) { s.Active = 4; s.Utilization = 1; s.Queue = 3.9 }), 2, adaptive.ReasonPoolWait},
		// A dead database: orders fail fast, the pool looks idle; the
		// errors cut, whatever the capacity says.
		{"errors cut before the capacity grows", 40, 40, with(func(s *adaptive.Signals) { s.Errors = 90; s.Utilization = 0.01 }), 32, adaptive.ReasonErrors},
		{"the ceiling cuts", 40, 40, with(func(s *adaptive.Signals) { s.P90 = 2 * time.Second }), 32, adaptive.ReasonCeiling},
		{"few samples hold", 40, 40, with(func(s *adaptive.Signals) { s.Orders = 3 }), 40, adaptive.ReasonFewSamples},
		{"stale holds", 40, 40, with(func(s *adaptive.Signals) { s.Stale = true }), 40, adaptive.ReasonStale},
		{"no pool figures with a pool hold", 40, 40, with(func(s *adaptive.Signals) {
			s.Utilization = 0
			s.P90 = 900 * time.Millisecond
			s.Baseline = 10 * time.Millisecond
		}), 40, adaptive.ReasonFewSamples},
		// The operator's overrides.
		{"a limit of 0 holds", 0, 0, half, 0, adaptive.ReasonStopped},
		{"a limit of 0 holds under errors", 0, 0, with(func(s *adaptive.Signals) { s.Errors = 90 }), 0, adaptive.ReasonStopped},
		{"a limit above the room's max comes down", 150, 150, half, 100, adaptive.ReasonBounds},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := adaptive.NextLimit(tt.limit, tt.active, tt.sig, rule)
			if got != tt.want || reason != tt.reason {
				t.Fatalf("NextLimit(%d, %d) = %d %s, want %d %s (capacity %.1f)", tt.limit, tt.active, got, reason, tt.want, tt.reason, adaptive.Capacity(tt.sig))
			}
		})
	}
	// A room's own bounds win over the default ones.
	r := rule.WithBounds(10, 50)
	if got, reason := adaptive.NextLimit(40, 40, with(func(s *adaptive.Signals) { s.Utilization = 0.01 }), r); got != 50 || reason != adaptive.ReasonCapacity {
		t.Fatalf("growth under the room's max 50 = %d %s", got, reason)
	}
	if got, _ := adaptive.NextLimit(12, 12, with(func(s *adaptive.Signals) { s.Active = 12; s.Utilization = 1; s.Queue = 8 }), r); got != 10 {
		t.Fatalf("cut above the room's min 10 = %d", got)
	}
}
