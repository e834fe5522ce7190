package adaptive

import (
	"math"
	"time"
)

// Rule is the controller's configuration.
type Rule struct {
	Min, Max int64
	// MinSamples: fewer orders in a window tell nothing; the limit holds.
	MinSamples int64
	// Ceiling: a p90 above it is stress whatever the baseline says.
	Ceiling time.Duration
}

// WithBounds returns r with a room's own bounds; 0 keeps r's (the
// configured default).
func (r Rule) WithBounds(minActive, maxActive int64) Rule {
	if minActive > 0 {
		r.Min = minActive
	}
	if maxActive > 0 {
		r.Max = maxActive
	}
	return r
}

// Reasons a limit changes or holds, as logged, counted by reason in the
// limit-change metric and shown in lastChange.
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
	stressErrorRate = 0.02
	stressPoolWait  = 50 * time.Millisecond
	cutFactor       = 0.8
	// smoothing weights the new gradient target against the current
	// limit, as Gradient2's smoothing does.
	smoothing = 0.2
	// maxGrowth caps growth per window (at least +1, so small limits can
	// grow at all).
	maxGrowth = 0.10
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
//     target = gradient × limit + √limit, and the limit moves a fifth of
//     the way there, growth capped at +10 % (at least +1) per window.
//
// The result is always within [Min, Max]. reason says why it changed or held.
func NextLimit(limit, active int64, s Signals, r Rule) (next int64, reason string) {
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
	if stress := stressOf(s, r); stress != "" {
		cut := min(int64(math.Floor(float64(limit)*cutFactor)), limit-1)
		return clamp(cut), stress
	}
	if 2*active < limit {
		return limit, ReasonUnderused
	}
	n := clamp(gradientStep(limit, s))
	if n == limit {
		return limit, ReasonSteady
	}
	return n, ReasonGradient
}

// stressOf returns the reason the window shows stress, or "".
func stressOf(s Signals, r Rule) string {
	switch {
	case s.ErrorRate() > stressErrorRate:
		return ReasonErrors
	case s.PoolWait > stressPoolWait:
		return ReasonPoolWait
	case r.Ceiling > 0 && s.P90 > r.Ceiling:
		return ReasonCeiling
	}
	return ""
}

// gradientStep is step 5 of NextLimit, before the bounds.
func gradientStep(limit int64, s Signals) int64 {
	gradient := 1.0
	if s.P90 > 0 && s.Baseline > 0 {
		gradient = min(max(float64(s.Baseline)/float64(s.P90), 0.5), 1)
	}
	l := float64(limit)
	want := gradient*l + math.Sqrt(l)
	smoothed := l + smoothing*(want-l)
	if smoothed >= l {
		n := int64(math.Ceil(smoothed - 1e-9))
		return min(n, max(int64(math.Floor(l*(1+maxGrowth))), limit+1))
	}
	return int64(math.Floor(smoothed))
}

// stressed reports whether reason is a stress cut: such a window does not
// raise the baseline, which is what the downstream does when healthy.
func stressed(reason string) bool {
	return reason == ReasonErrors || reason == ReasonPoolWait || reason == ReasonCeiling
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
