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
	// Pool: the instances record their database pool's figures (server
	// mode), so a window without them (too few acquires to tell) holds
	// rather than falling back to the latency gradient, which is for
	// gateway mode, where no pool is seen.
	Pool bool
	// Gate: the adaptive rooms' admissions pass the pool gate (PoolGate),
	// which keeps the pool from queuing tick by tick, so a window whose
	// acquires did not queue cuts nothing: the gate, not the limit, held
	// admission back, and a lower limit would only leave slots to the
	// users still on their way (polling clients learn of their turn
	// seconds later).
	Gate bool
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
	ReasonPoolWait   = "pool_wait"   // cut: acquires queued for the pool (to the capacity), or waited above 50 ms (without pool figures)
	ReasonCeiling    = "p90_ceiling" // cut: p90 above the hard ceiling
	ReasonCapacity   = "capacity"    // moved to what the pool sustains (Little's law)
	ReasonGradient   = "gradient"    // moved toward gradient × limit + √limit (without pool figures)
	ReasonStale      = "stale"       // hold: no report for the window
	ReasonFewSamples = "few_samples" // hold
	ReasonUnderused  = "underused"   // hold: the limit did not bind, no evidence for growth
	ReasonSteady     = "steady"      // hold: the rule asks for no change
	ReasonGated      = "gated"       // hold: the pool gate held admission back and nobody queued
	ReasonStopped    = "stopped"     // hold: the operator set targetActive 0
)

// Thresholds of the stress cut.
const (
	stressErrorRate = 0.02
	stressPoolWait  = 50 * time.Millisecond
	cutFactor       = 0.8
	// smoothing weights the new gradient target against the current
	// limit.
	smoothing = 0.2
	// maxGrowth caps the gradient's growth per window (at least +1, so
	// small limits can grow at all).
	maxGrowth = 0.10
)

// The capacity rule's constants.
const (
	// targetUtilization is the pool's busy share the limit aims at: close
	// enough to 1 to keep the pool's throughput, far enough below it that
	// acquires seldom queue.
	targetUtilization = 0.95
	// deadband: a capacity within ±5 % of the limit holds it.
	deadband = 0.05
	// capacityGrowth caps growth per window (×2, at least +2) while the
	// pool is mostly idle (busy under half the target): from a limit far
	// too low, five windows cover a factor of 32. Nearer the target,
	// growth is capped at ×1.25 (busyGrowth): the users a step admits at
	// once reach the pool in a burst, and a doubling's burst queues.
	capacityGrowth = 2
	busyGrowth     = 1.25
	// boundShare: growth needs the limit to have bound (users left
	// waiting) in at least this share of the window's admission runs.
	boundShare = 0.5
	// queuedCut: a cut with at least this many acquires waiting on
	// average is a pool_wait cut (else a capacity one).
	queuedCut = 0.5
)

// NextLimit is the admission limit controller, a pure function of the
// current limit, the active count and one window's signals. In order:
//
//  0. a limit of 0 is the operator's stop: it holds (ReasonStopped);
//  1. a limit outside [Min, Max] moves inside (ReasonBounds);
//  2. stale or too few samples: hold;
//  3. stress — error rate > 2 % or p90 > Ceiling — cuts the limit ×0.8
//     (rounded down, at least −1), even when the limit is underused: the
//     downstream is hurting;
//  4. with the pool's figures (Signals.HasPool), the capacity rule:
//     capacity = 0.95 × (Active − Queue) ÷ Utilization, the slots that
//     keep the pool 95 % busy with nobody queued for it (doc.go argues
//     it). Below the limit by more than 5 %, or below it at all while
//     acquires wait, the limit is cut to it at once (behind the pool
//     gate, Rule.Gate, only while acquires wait: otherwise it holds,
//     ReasonGated); above it by more
//     than 5 %, the limit bound in at least half the window's admission
//     runs and no acquires queued, the limit grows to it, at most ×2 (at
//     least +2) a window while the pool is under half its target busy
//     and ×1.25 (at least +1) above; else it holds;
//  5. a window without them holds when Rule.Pool says there is a pool;
//     without a pool (gateway mode: only the origin's latency is known):
//     mean pool wait > 50 ms cuts ×0.8; active < limit/2 holds; else a
//     gradient on latency: gradient = clamp(baseline ÷ p90, 0.5, 1),
//     target = gradient × limit + √limit, and the limit moves a fifth of
//     the way there, growth capped at +10 % (at least +1) per window.
//
// The result is always within [Min, Max]. reason says why it changed or held.
func NextLimit(limit, active int64, s Signals, r Rule) (next int64, reason string) {
	lo, hi := max(r.Min, 1), max(r.Max, r.Min, 1)
	clamp := func(n int64) int64 { return min(max(n, lo), hi) }
	if limit == 0 {
		return 0, ReasonStopped
	}
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
		return clamp(cut(limit)), stress
	}
	if s.HasPool() {
		n, reason := capacityStep(limit, s, r.Gate)
		return clamp(n), reason
	}
	if r.Pool {
		return limit, ReasonFewSamples
	}
	if s.PoolWait > stressPoolWait {
		return clamp(cut(limit)), ReasonPoolWait
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

// Capacity is the capacity rule's estimate of the limit that keeps the
// pool at its target utilization with nobody queued for it: 0.95 ×
// (Active − Queue) ÷ Utilization (Active − Queue at least 1). It is +Inf
// without pool figures.
func Capacity(s Signals) float64 {
	if !s.HasPool() {
		return math.Inf(1)
	}
	return targetUtilization * max(s.Active-s.Queue, 1) / s.Utilization
}

// capacityStep is step 4 of NextLimit, before the bounds; gated: the
// pool gate is in front of the pool (Rule.Gate).
func capacityStep(limit int64, s Signals, gated bool) (int64, string) {
	want, l := Capacity(s), float64(limit)
	switch {
	case gated && want < l && s.Queue < queuedCut:
		return limit, ReasonGated
	case want < l*(1-deadband) || (want < l && s.Queue >= queuedCut):
		n := min(int64(math.Floor(want)), limit-1)
		if s.Queue >= queuedCut {
			return n, ReasonPoolWait
		}
		return n, ReasonCapacity
	case want > l*(1+deadband):
		switch {
		case s.Bound < boundShare:
			return limit, ReasonUnderused
		case s.Queue >= queuedCut:
			return limit, ReasonSteady // acquires queue: no growth, whatever a mixed window says
		}
		grow := max(capacityGrowth*limit, limit+2)
		if s.Utilization >= targetUtilization/2 {
			grow = max(int64(math.Floor(busyGrowth*l)), limit+1)
		}
		return min(int64(math.Ceil(want)), grow), ReasonCapacity
	}
	return limit, ReasonSteady
}

// cut is a stress cut: ×0.8, rounded down, at least −1.
func cut(limit int64) int64 {
	return min(int64(math.Floor(float64(limit)*cutFactor)), limit-1)
}

// stressOf returns the reason the window shows stress, or "".
func stressOf(s Signals, r Rule) string {
	switch {
	case s.ErrorRate() > stressErrorRate:
		return ReasonErrors
	case r.Ceiling > 0 && s.P90 > r.Ceiling:
		return ReasonCeiling
	}
	return ""
}

// gradientStep is step 5's gradient, before the bounds.
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
