package queue

import (
	"math"
	"time"
)

// Mode is how a room's targetActive is set.
type Mode string

// Modes of a room.
const (
	// ModeFixed: targetActive is what the operator set (the default).
	ModeFixed Mode = "fixed"
	// ModeAdaptive: the limit controller sets targetActive every window
	// from the downstream's health, within [MinActive, MaxActive].
	ModeAdaptive Mode = "adaptive"
)

// ValidMode reports whether m is a known mode.
func ValidMode(m Mode) bool { return m == ModeFixed || m == ModeAdaptive }

// Signals are one window's health figures of a room's downstream,
// aggregated over every instance.
type Signals struct {
	Window   time.Duration
	Orders   int64         // orders finished in the window
	Errors   int64         // of which failed for an infrastructure reason (DB down, timeout)
	P90      time.Duration // order latency, 90th percentile of the window
	Baseline time.Duration // long-run p90: an EWMA of past windows' p90s
	PoolWait time.Duration // mean DB pool acquire wait per acquire
	Stale    bool          // no instance reported the window
}

// ErrorRate is Errors ÷ Orders (0 without orders).
func (s Signals) ErrorRate() float64 {
	if s.Orders == 0 {
		return 0
	}
	return float64(s.Errors) / float64(s.Orders)
}

// LimitRule is the controller's configuration.
type LimitRule struct {
	Min, Max int64
	// MinSamples: fewer orders in a window tell nothing; the limit holds.
	MinSamples int64
	// Ceiling: a p90 above it is stress whatever the baseline says.
	Ceiling time.Duration
}

// WithBounds returns r with a room's own bounds; 0 keeps r's (the
// configured default).
func (r LimitRule) WithBounds(minActive, maxActive int64) LimitRule {
	if minActive > 0 {
		r.Min = minActive
	}
	if maxActive > 0 {
		r.Max = maxActive
	}
	return r
}

// Reasons a limit changes or holds, as logged and shown in lastChange.
const (
	ReasonBounds     = "bounds"      // moved into [min, max]
	ReasonErrors     = "errors"      // cut: error rate above 2 %
	ReasonPoolWait   = "pool_wait"   // cut: pool acquire wait above 50 ms
	ReasonCeiling    = "p90_ceiling" // cut: p90 above the hard ceiling
	ReasonGradient   = "gradient"    // moved toward gradient × limit + √limit
	ReasonStale      = "stale"       // hold: no report for the window
	ReasonFewSamples = "few_samples" // hold
	ReasonUnderused  = "underused"   // hold: active < limit/2, no evidence for growth
	ReasonSteady     = "steady"      // hold: the rule asks for no change
)

// Thresholds of the stress cut.
const (
	StressErrorRate = 0.02
	StressPoolWait  = 50 * time.Millisecond
	CutFactor       = 0.8
	// Smoothing weights the new gradient target against the current
	// limit, as Gradient2's smoothing does.
	Smoothing = 0.2
	// MaxGrowth caps growth per window (at least +1, so small limits can
	// grow at all).
	MaxGrowth = 0.10
)

// NextLimit is the admission limit controller, a pure function of the
// current limit, the active count and one window's signals. In order:
//
//  1. a limit outside [Min, Max] moves inside (ReasonBounds);
//  2. stale or too few samples: hold;
//  3. stress — error rate > 2 %, mean pool acquire wait > 50 ms or p90 >
//     Ceiling — cuts the limit ×0.8 (rounded down, at least −1). Stress
//     cuts even when the limit is underused: the downstream is hurting;
//  4. active < limit/2: hold (an unused limit says nothing about more);
//  5. otherwise, as in Gradient2: gradient = clamp(baseline ÷ p90, 0.5, 1),
//     target = gradient × limit + √limit, and the limit moves Smoothing of
//     the way there, growth capped at +10 % (at least +1) per window.
//
// The result is always within [Min, Max]. reason says why it changed or held.
func NextLimit(limit, active int64, s Signals, r LimitRule) (next int64, reason string) {
	lo, hi := max(r.Min, 1), max(r.Max, r.Min, 1)
	clamp := func(n int64) int64 { return min(max(n, lo), hi) }
	if limit < lo || limit > hi {
		return clamp(limit), ReasonBounds
	}
	switch {
	case s.Stale:
		return limit, ReasonStale
	case s.Orders < max(r.MinSamples, 1):
		return limit, ReasonFewSamples
	}
	stress := ""
	switch {
	case s.ErrorRate() > StressErrorRate:
		stress = ReasonErrors
	case s.PoolWait > StressPoolWait:
		stress = ReasonPoolWait
	case r.Ceiling > 0 && s.P90 > r.Ceiling:
		stress = ReasonCeiling
	}
	if stress != "" {
		cut := min(int64(math.Floor(float64(limit)*CutFactor)), limit-1)
		return clamp(cut), stress
	}
	if 2*active < limit {
		return limit, ReasonUnderused
	}
	gradient := 1.0
	if s.P90 > 0 && s.Baseline > 0 {
		gradient = min(max(float64(s.Baseline)/float64(s.P90), 0.5), 1)
	}
	l := float64(limit)
	want := gradient*l + math.Sqrt(l)
	smoothed := l + Smoothing*(want-l)
	var n int64
	if smoothed >= l {
		n = int64(math.Ceil(smoothed - 1e-9))
		n = min(n, max(int64(math.Floor(l*(1+MaxGrowth))), limit+1))
	} else {
		n = int64(math.Floor(smoothed))
	}
	n = clamp(n)
	if n == limit {
		return limit, ReasonSteady
	}
	return n, ReasonGradient
}

// NextBaseline folds a window's p90 into the long-run baseline (an EWMA
// with weight 0.1, so about the last ten windows count). A first p90
// becomes the baseline; without samples it stays.
func NextBaseline(baseline, p90 time.Duration, samples bool) time.Duration {
	if !samples || p90 <= 0 {
		return baseline
	}
	if baseline <= 0 {
		return p90
	}
	return baseline + (p90-baseline)/10
}

// latencyBuckets are the upper bounds of the order latency histogram kept
// per room and window in Redis; the last bucket is open.
var latencyBuckets = []time.Duration{
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
