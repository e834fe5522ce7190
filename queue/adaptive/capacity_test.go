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
// pool ÷ hold orders a second, the database itself at most dbRate (a hot
// row: every order waits for the row's lock while holding its
// connection; or a CPU the database shares and the machine saturates),
// and users arrive at most demand a second (0: a backlog that never
// ends). Past dbRate the hold grows with concurrency: connections held ÷
// throughput.
type model struct {
	pool                   float64
	outside, hold          float64 // seconds
	dbRate, demand         float64 // orders a second (0: no bound)
	window                 time.Duration
	errorRate              float64
	throughput, queue, use float64 // of the last window
}

// signals is what a window at limit shows: Little's law on each station.
func (m *model) signals(limit int64) adaptive.Signals {
	l := float64(limit)
	x := l / (m.outside + m.hold) // the limit's bound
	bound := 1.0
	for _, c := range []float64{m.pool / m.hold, m.dbRate, m.demand} {
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
	wait, hold := time.Duration(0), m.hold
	if x > 0 {
		wait = time.Duration(m.queue / x * float64(time.Second))
		hold = max(hold, busy/x)
	}
	h := time.Duration(hold * float64(time.Second))
	return adaptive.Signals{Window: m.window, Orders: orders, Errors: int64(m.errorRate * float64(orders)),
		P90: h + wait, PoolWait: wait, Hold: h,
		Utilization: m.use, Queue: m.queue, Active: active, Bound: bound}
}

// best is the highest throughput any limit reaches in the model.
func (m *model) best() float64 {
	b := m.pool / m.hold
	for _, c := range []float64{m.dbRate, m.demand} {
		if c > 0 {
			b = min(b, c)
		}
	}
	return b
}

// run steps the controller from limit for n windows as Controller.Step
// does (NextLimit, then Guard with the state the last step stored) and
// returns the limits and the reasons.
func (m *model) run(limit int64, n int, r adaptive.Rule) ([]int64, []string) {
	out, why := []int64{limit}, []string{"start"}
	var prev adaptive.State
	now := time.UnixMilli(1_000_000 * m.window.Milliseconds())
	for range n {
		now = now.Add(m.window)
		s := m.signals(limit)
		next, reason := adaptive.NextLimit(limit, limit, s, r)
		next, reason, ceil := adaptive.Guard(limit, next, reason, s, prev, now)
		prev.Signals, prev.Ceiling = s, ceil
		if next != limit {
			prev.LastChange = &adaptive.LimitChange{At: now, From: limit, To: next, Reason: reason}
		}
		limit = next
		out, why = append(out, limit), append(why, reason)
	}
	return out, why
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
		{"hot row", model{pool: 40, outside: 0.08, hold: 0.01, dbRate: 100}, 100, 2},
		// The same from a low start: the limit doubles into the row's
		// bound, the hold grows with it (0.12 s to 0.32 s), and the limit
		// goes back to the one where the hold was flat.
		{"hot row from low", model{pool: 40, outside: 0.08, hold: 0.01, dbRate: 100}, 20, 2},
		// A fast database on a saturated CPU: 250 orders/s whatever the
		// concurrency. The idle pool doubles the limit to 200, the
		// holds grow from 3 ms to 160 ms and 60 acquires queue; the
		// limit returns to 100 and stays, rather than swinging between a
		// cut and a regrowth.
		{"saturated CPU", model{pool: 40, outside: 0.4, hold: 0.003, dbRate: 250}, 100, 2},
		// The same just below the bound (the capacity rule alone swings
		// 133 ↔ 154 there, 14 acquires queued at 154): the growth to 150
		// raises the hold and goes back.
		{"saturated CPU from 120", model{pool: 40, outside: 0.4, hold: 0.003, dbRate: 250}, 120, 2},
		// A cold cache warming: holds of 50 ms (the start), the limit
		// follows the pool, not a latency remembered from then.
		{"cold cache", model{pool: 40, outside: 0.1, hold: 0.05}, 20, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.m
			m.window = win
			limits, why := m.run(tt.from, 12, rule)
			for w := tt.windows; w < len(limits); w++ {
				m.signals(limits[w])
				if m.throughput < 0.9*m.best() || m.queue > 1 {
					t.Fatalf("window %d at limit %d: %.0f orders/s of %.0f, %.1f queued for the pool; limits %v %v",
						w, limits[w], m.throughput, m.best(), m.queue, limits, why)
				}
				if w > tt.windows+2 && limits[w] != limits[w-1] {
					t.Fatalf("still moving after window %d: limits %v %v", w-1, limits, why)
				}
			}
			t.Logf("limits %v %v", limits, why)
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
	// Behind the pool gate a capacity below the limit cuts only while
	// acquires queue: otherwise the gate held admission back, and the
	// slots above the pool's are the users still on their way.
	gated := rule
	gated.Gate = true
	for _, tt := range []struct {
		name   string
		sig    adaptive.Signals
		want   int64
		reason string
	}{
		// 0.95 × 40 ÷ 1 = 38 < 40: no cut, nobody queued
		{"a full pool without a queue holds", with(func(s *adaptive.Signals) { s.Utilization = 1; s.Active = 30 }), 40, adaptive.ReasonGated},
		{"a queue still cuts", with(func(s *adaptive.Signals) { s.Utilization = 1; s.Queue = 10 }), 28, adaptive.ReasonPoolWait},
		{"growth is as without the gate", half, 50, adaptive.ReasonCapacity},
		{"errors cut", with(func(s *adaptive.Signals) { s.Errors = 90; s.Utilization = 1; s.Active = 30 }), 32, adaptive.ReasonErrors},
	} {
		if got, reason := adaptive.NextLimit(40, 40, tt.sig, gated); got != tt.want || reason != tt.reason {
			t.Errorf("gated, %s: NextLimit(40) = %d %s, want %d %s", tt.name, got, reason, tt.want, tt.reason)
		}
	}
}

// TestGuard: what the step before showed tempers the rule's answer.
func TestGuard(t *testing.T) {
	const win = 2 * time.Second
	now := time.UnixMilli(1_000_000 * win.Milliseconds())
	ago := func(windows float64) time.Time { return now.Add(-time.Duration(windows * float64(win))) }
	grew := &adaptive.LimitChange{At: ago(1), From: 50, To: 100, Reason: adaptive.ReasonCapacity}
	cutTo := &adaptive.LimitChange{At: ago(1), From: 100, To: 50, Reason: adaptive.ReasonPoolWait}
	held := func(d time.Duration) adaptive.Signals {
		return adaptive.Signals{Window: win, Orders: 400, Hold: d, Active: 100}
	}
	filled := func(a float64) adaptive.Signals {
		return adaptive.Signals{Window: win, Orders: 400, Hold: time.Millisecond, Active: a}
	}
	state := func(h time.Duration, lc *adaptive.LimitChange, c adaptive.Ceiling) adaptive.State {
		return adaptive.State{Signals: held(h), LastChange: lc, Ceiling: c}
	}
	for _, tt := range []struct {
		name         string
		limit, next  int64
		reason       string
		s            adaptive.Signals
		prev         adaptive.State
		want         int64
		wantReason   string
		wantCeiling  int64
		ceilingUntil time.Time
	}{
		// ×2 growth, hold 3 ms → 9 ms: back to 50, capped there.
		{"a growth that raised the hold goes back", 100, 200, adaptive.ReasonCapacity, held(9 * time.Millisecond),
			state(3*time.Millisecond, grew, adaptive.Ceiling{}), 50, adaptive.ReasonHoldGrowth, 50, now.Add(15 * win)},
		{"so does one the rule would hold", 100, 100, adaptive.ReasonSteady, held(9 * time.Millisecond),
			state(3*time.Millisecond, grew, adaptive.Ceiling{}), 50, adaptive.ReasonHoldGrowth, 50, now.Add(15 * win)},
		{"a pool_wait cut below the level goes there", 100, 40, adaptive.ReasonPoolWait, held(300 * time.Millisecond),
			state(3*time.Millisecond, grew, adaptive.Ceiling{}), 40, adaptive.ReasonHoldGrowth, 50, now.Add(15 * win)},
		// The window before mixed fast acquires in (256 ms then 304 ms at
		// a 300 ms delay); the orders doubled with the limit.
		{"a growth that served more orders stands", 100, 110, adaptive.ReasonCapacity, adaptive.Signals{Window: win, Orders: 800, Hold: 304 * time.Millisecond, Active: 100},
			state(256*time.Millisecond, grew, adaptive.Ceiling{}), 110, adaptive.ReasonCapacity, 0, time.Time{}},
		// A doubling on a busy machine: the hold 13 → 26 ms, but the
		// orders ×1.27 in a window half at the old limit.
		{"a growth that served a quarter more orders stands", 160, 200, adaptive.ReasonCapacity, adaptive.Signals{Window: win, Orders: 508, Hold: 26 * time.Millisecond, Active: 109},
			state(13*time.Millisecond, &adaptive.LimitChange{At: ago(1), From: 80, To: 160}, adaptive.Ceiling{}), 200, adaptive.ReasonCapacity, 0, time.Time{}},
		// ×1.4 after a ×2: under the ×1.5 a doubling allows.
		{"a hold that grew less than half the growth", 100, 200, adaptive.ReasonCapacity, held(14 * time.Millisecond),
			state(10*time.Millisecond, grew, adaptive.Ceiling{}), 200, adaptive.ReasonCapacity, 0, time.Time{}},
		{"sub-millisecond noise", 100, 200, adaptive.ReasonCapacity, held(1500 * time.Microsecond),
			state(500*time.Microsecond, grew, adaptive.Ceiling{}), 200, adaptive.ReasonCapacity, 0, time.Time{}},
		{"a growth two windows ago is not judged", 100, 200, adaptive.ReasonCapacity, held(9 * time.Millisecond),
			state(3*time.Millisecond, &adaptive.LimitChange{At: ago(2), From: 50, To: 100}, adaptive.Ceiling{}), 200, adaptive.ReasonCapacity, 0, time.Time{}},
		{"errors cut whatever the hold", 100, 80, adaptive.ReasonErrors, held(9 * time.Millisecond),
			state(3*time.Millisecond, grew, adaptive.Ceiling{}), 80, adaptive.ReasonErrors, 0, time.Time{}},
		// The drain window after a cut looks idle.
		{"no growth right after a cut", 50, 100, adaptive.ReasonCapacity, held(time.Millisecond),
			state(time.Millisecond, cutTo, adaptive.Ceiling{}), 50, adaptive.ReasonSettling, 0, time.Time{}},
		{"a second cut right after a cut", 50, 40, adaptive.ReasonPoolWait, held(time.Millisecond),
			state(time.Millisecond, cutTo, adaptive.Ceiling{}), 40, adaptive.ReasonPoolWait, 49, now.Add(5 * win)},
		{"a pool_wait cut caps below the limit", 100, 60, adaptive.ReasonPoolWait, held(time.Millisecond),
			state(time.Millisecond, nil, adaptive.Ceiling{}), 60, adaptive.ReasonPoolWait, 99, now.Add(5 * win)},
		{"a lower ceiling stays", 100, 60, adaptive.ReasonPoolWait, held(time.Millisecond),
			state(time.Millisecond, nil, adaptive.Ceiling{Limit: 80, Until: now.Add(win)}), 60, adaptive.ReasonPoolWait, 80, now.Add(win)},
		{"growth up to the ceiling", 70, 140, adaptive.ReasonCapacity, held(time.Millisecond),
			state(time.Millisecond, nil, adaptive.Ceiling{Limit: 80, Until: now.Add(win)}), 80, adaptive.ReasonCapacity, 80, now.Add(win)},
		// 56 after a pool_wait cut from 80, the pool idle a window: ×1.25.
		{"growth under a ceiling at most ×1.25", 56, 112, adaptive.ReasonCapacity, held(time.Millisecond),
			state(time.Millisecond, nil, adaptive.Ceiling{Limit: 79, Until: now.Add(win)}), 70, adaptive.ReasonCapacity, 79, now.Add(win)},
		{"growth stops at the ceiling", 80, 120, adaptive.ReasonCapacity, held(time.Millisecond),
			state(time.Millisecond, nil, adaptive.Ceiling{Limit: 80, Until: now.Add(win)}), 80, adaptive.ReasonCapped, 80, now.Add(win)},
		// Bursts bound the limit in most runs, but the room filled 70 of
		// its 100 on average: the slack would burst on a slowing pool.
		{"no growth of a limit the room does not fill", 100, 200, adaptive.ReasonCapacity, filled(70),
			state(time.Millisecond, nil, adaptive.Ceiling{}), 100, adaptive.ReasonUnderused, 0, time.Time{}},
		{"growth of a limit the room fills to 0.8", 100, 200, adaptive.ReasonCapacity, filled(80),
			state(time.Millisecond, nil, adaptive.Ceiling{}), 200, adaptive.ReasonCapacity, 0, time.Time{}},
		// The limit doubled halfway through the window: 75 on average.
		{"the window after a doubling fills its mean limit", 100, 200, adaptive.ReasonCapacity, filled(60),
			state(time.Millisecond, grew, adaptive.Ceiling{}), 200, adaptive.ReasonCapacity, 0, time.Time{}},
		{"an expired ceiling", 80, 120, adaptive.ReasonCapacity, held(time.Millisecond),
			state(time.Millisecond, nil, adaptive.Ceiling{Limit: 80, Until: now}), 120, adaptive.ReasonCapacity, 0, time.Time{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, reason, c := adaptive.Guard(tt.limit, tt.next, tt.reason, tt.s, tt.prev, now)
			if got != tt.want || reason != tt.wantReason || c.Limit != tt.wantCeiling || (c.Limit > 0 && !c.Until.Equal(tt.ceilingUntil)) {
				t.Fatalf("Guard(%d, %d, %s) = %d %s %+v, want %d %s ceiling %d until %v",
					tt.limit, tt.next, tt.reason, got, reason, c, tt.want, tt.wantReason, tt.wantCeiling, tt.ceilingUntil)
			}
		})
	}
}
