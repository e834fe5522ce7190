package adaptive_test

import (
	"testing"
	"time"

	"waitingroom/queue/adaptive"
)

func TestNextLimit(t *testing.T) {
	rule := adaptive.Rule{Min: 2, Max: 100, MinSamples: 10, Ceiling: time.Second}
	healthy := adaptive.Signals{Orders: 100, P90: 20 * time.Millisecond, Baseline: 20 * time.Millisecond, PoolWait: time.Millisecond}
	with := func(f func(*adaptive.Signals)) adaptive.Signals { s := healthy; f(&s); return s }
	tests := []struct {
		name          string
		limit, active int64
		sig           adaptive.Signals
		want          int64
		reason        string
	}{
		{"below min", 1, 1, healthy, 2, adaptive.ReasonBounds},
		{"above max", 150, 150, healthy, 100, adaptive.ReasonBounds},
		{"stale holds", 20, 20, with(func(s *adaptive.Signals) { s.Stale = true; s.Errors = 50 }), 20, adaptive.ReasonStale},
		{"few samples hold", 20, 20, with(func(s *adaptive.Signals) { s.Orders = 9; s.Errors = 9 }), 20, adaptive.ReasonFewSamples},
		{"errors cut", 20, 20, with(func(s *adaptive.Signals) { s.Errors = 3 }), 16, adaptive.ReasonErrors},
		{"2% errors is no stress", 20, 20, with(func(s *adaptive.Signals) { s.Errors = 2 }), 21, adaptive.ReasonGradient},
		{"pool wait cut", 20, 20, with(func(s *adaptive.Signals) { s.PoolWait = 51 * time.Millisecond }), 16, adaptive.ReasonPoolWait},
		{"ceiling cut", 20, 20, with(func(s *adaptive.Signals) { s.P90 = 1100 * time.Millisecond; s.Baseline = time.Second }), 16, adaptive.ReasonCeiling},
		{"cut even when underused", 20, 3, with(func(s *adaptive.Signals) { s.Errors = 10 }), 16, adaptive.ReasonErrors},
		{"cut of a small limit takes at least one", 3, 3, with(func(s *adaptive.Signals) { s.Errors = 10 }), 2, adaptive.ReasonErrors},
		{"cut stops at min", 2, 2, with(func(s *adaptive.Signals) { s.Errors = 10 }), 2, adaptive.ReasonErrors},
		{"underused holds", 20, 9, healthy, 20, adaptive.ReasonUnderused},
		// gradient 1: 20 + 0.2×√20 = 20.9 → 21
		{"healthy grows", 20, 20, healthy, 21, adaptive.ReasonGradient},
		// 100 + 0.2×10 = 102 but capped at max 100 (a limit at max stays)
		{"growth stops at max", 100, 100, healthy, 100, adaptive.ReasonSteady},
		// gradient 1 on a large limit: +0.2×√400 = +4 ≤ 10 %
		{"growth is smoothed", 400, 400, healthy, 404, adaptive.ReasonGradient},
		// gradient clamped to 0.5: 40 → 40 + 0.2×(20+6.32−40) = 37.26 → 37
		{"slow p90 shrinks", 40, 40, with(func(s *adaptive.Signals) { s.P90 = 500 * time.Millisecond }), 37, adaptive.ReasonGradient},
		// gradient 0.8: 40 + 0.2×(32+6.32−40) = 39.66 → 39
		{"mildly slow shrinks a little", 40, 40, with(func(s *adaptive.Signals) { s.P90 = 25 * time.Millisecond }), 39, adaptive.ReasonGradient},
		// no baseline yet: gradient 1
		{"no baseline grows", 10, 10, with(func(s *adaptive.Signals) { s.Baseline = 0 }), 11, adaptive.ReasonGradient},
	}
	big := adaptive.Rule{Min: 2, Max: 10_000, MinSamples: 10, Ceiling: time.Second}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rule
			if tt.limit > 100 && tt.reason != adaptive.ReasonBounds {
				r = big
			}
			got, reason := adaptive.NextLimit(tt.limit, tt.active, tt.sig, r)
			if got != tt.want || reason != tt.reason {
				t.Fatalf("NextLimit(%d, %d) = %d %s, want %d %s", tt.limit, tt.active, got, reason, tt.want, tt.reason)
			}
		})
	}
}

// TestNextLimitGrowthCap: growth per window is capped at +10 % (at least
// +1), and the limit always stays within its bounds.
func TestNextLimitGrowthCap(t *testing.T) {
	rule := adaptive.Rule{Min: 1, Max: 1_000_000, MinSamples: 1}
	sig := adaptive.Signals{Orders: 10, P90: time.Millisecond, Baseline: time.Millisecond}
	for limit := int64(1); limit < 5000; {
		next, _ := adaptive.NextLimit(limit, limit, sig, rule)
		if next <= limit || float64(next) > max(float64(limit)*1.1, float64(limit+1)) {
			t.Fatalf("from %d grew to %d", limit, next)
		}
		limit = next
	}
	slow := adaptive.Signals{Orders: 10, P90: time.Second, Baseline: time.Millisecond}
	for limit := int64(5000); limit > 1; {
		next, _ := adaptive.NextLimit(limit, limit, slow, rule)
		if next > limit || next < rule.Min {
			t.Fatalf("from %d went to %d under a slow p90", limit, next)
		}
		if next == limit {
			break // the fixed point of 0.5 × L + √L: L = 4
		}
		limit = next
	}
}

func TestNextBaseline(t *testing.T) {
	ms := time.Millisecond
	for _, tt := range []struct {
		base, p90 time.Duration
		samples   bool
		want      time.Duration
	}{
		{0, 20 * ms, true, 20 * ms},
		{20 * ms, 120 * ms, true, 30 * ms},
		{20 * ms, 120 * ms, false, 20 * ms},
		{20 * ms, 0, true, 20 * ms},
	} {
		if got := adaptive.NextBaseline(tt.base, tt.p90, tt.samples); got != tt.want {
			t.Errorf("NextBaseline(%v, %v, %v) = %v, want %v", tt.base, tt.p90, tt.samples, got, tt.want)
		}
	}
}
