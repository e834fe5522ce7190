package adaptive

import (
	"strconv"
	"time"
)

// Signals are one window's health figures of a room's downstream,
// aggregated over every instance.
type Signals struct {
	Window   time.Duration
	Orders   int64         // orders finished in the window
	Errors   int64         // of which failed for an infrastructure reason (DB down, timeout)
	P90      time.Duration // order latency, 90th percentile of the window
	Baseline time.Duration // long-run p90: an EWMA of past windows' p90s
	PoolWait time.Duration // mean DB pool acquire wait per acquire
	Hold     time.Duration // mean time a connection was held per acquire
	Stale    bool          // no instance reported the window

	// The pool and the room over the window (Little's law's terms):
	// Utilization is the pool's busy share, connection time held ÷
	// connection time available (0: no pool figures, as in gateway mode);
	// Queue is the mean number of acquires waiting for a connection (their
	// total wait ÷ the window); Active is the room's mean active count
	// over its admission runs, and Bound the share of those runs that left
	// users waiting (the limit, not the arrivals, bound the room).
	Utilization float64
	Queue       float64
	Active      float64
	Bound       float64
}

// HasPool reports whether the window has the pool's figures and the
// room's admission runs: what the capacity rule needs.
func (s Signals) HasPool() bool { return s.Utilization > 0 && s.Active > 0 }

// ErrorRate is Errors ÷ Orders (0 without orders).
func (s Signals) ErrorRate() float64 {
	if s.Orders == 0 {
		return 0
	}
	return float64(s.Errors) / float64(s.Orders)
}

// windowOf numbers the window that t falls in.
func windowOf(t time.Time, window time.Duration) int64 {
	return t.UnixMilli() / window.Milliseconds()
}

// windowSignals reads one window's signals hash.
func windowSignals(m map[string]string, window time.Duration) Signals {
	num := func(f string) int64 { n, _ := strconv.ParseInt(m[f], 10, 64); return n }
	s := Signals{Window: window, Orders: num("orders"), Errors: num("errors"), Stale: len(m) == 0}
	if acq := num("acquires"); acq > 0 {
		s.PoolWait = time.Duration(num("wait_us")/acq) * time.Microsecond
		s.Hold = time.Duration(num("held_us")/acq) * time.Microsecond
	}
	if c := num("cap_us"); c > 0 {
		s.Utilization = min(float64(num("held_us"))/float64(c), 1)
	}
	if us := window.Microseconds(); us > 0 {
		s.Queue = float64(num("wait_us")) / float64(us)
	}
	if runs := num("runs"); runs > 0 {
		s.Active = float64(num("active_sum")) / float64(runs)
		s.Bound = float64(num("bound")) / float64(runs)
	}
	counts := make([]int64, len(latencyBuckets)+1)
	for i := range counts {
		counts[i] = num("b" + strconv.Itoa(i))
	}
	s.P90 = quantile(counts, 0.9)
	return s
}

// latencyBuckets are the upper bounds of the order latency histogram kept
// per room and window in Redis; the last bucket is open.
var latencyBuckets = [...]time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond,
	20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 150 * time.Millisecond,
	200 * time.Millisecond, 300 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond,
	time.Second, 1500 * time.Millisecond, 2 * time.Second, 3 * time.Second, 5 * time.Second,
	10 * time.Second,
}

// bucketOf returns the histogram bucket of a latency.
func bucketOf(d time.Duration) int {
	for i, b := range latencyBuckets {
		if d <= b {
			return i
		}
	}
	return len(latencyBuckets)
}

// quantile estimates the q-quantile of a bucketed histogram, interpolating
// linearly inside the bucket; the open last bucket reads as twice the last
// bound.
func quantile(counts []int64, q float64) time.Duration {
	var n int64
	for _, c := range counts {
		n += c
	}
	if n == 0 {
		return 0
	}
	rank := q * float64(n)
	var cum int64
	for i, c := range counts {
		if c == 0 {
			continue
		}
		if float64(cum+c) >= rank {
			lo := time.Duration(0)
			if i > 0 {
				lo = latencyBuckets[i-1]
			}
			hi := 2 * latencyBuckets[len(latencyBuckets)-1]
			if i < len(latencyBuckets) {
				hi = latencyBuckets[i]
			}
			frac := (rank - float64(cum)) / float64(c)
			return lo + time.Duration(frac*float64(hi-lo))
		}
		cum += c
	}
	return 2 * latencyBuckets[len(latencyBuckets)-1]
}
