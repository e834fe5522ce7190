package measure

import (
	"testing"
	"time"
)

func msList(vals ...int) []time.Duration {
	out := make([]time.Duration, len(vals))
	for i, v := range vals {
		out[i] = time.Duration(v) * time.Millisecond
	}
	return out
}

func TestPercentile(t *testing.T) {
	one20 := msList(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20)
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"single p50", msList(7), 50, 7 * time.Millisecond},
		{"single p100", msList(7), 100, 7 * time.Millisecond},
		{"odd count median", msList(1, 2, 3), 50, 2 * time.Millisecond},
		{"even count median is the lower middle", msList(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"p95 of 20 is the 19th, not the 20th", one20, 95, 19 * time.Millisecond},
		{"p90 of 20 is the 18th", one20, 90, 18 * time.Millisecond},
		{"p99 of 20 rounds up to the 20th", one20, 99, 20 * time.Millisecond},
		{"p100 is the max", one20, 100, 20 * time.Millisecond},
		{"p0.1 is the min", one20, 0.1, 1 * time.Millisecond},
		// Wikipedia's nearest-rank example: 15 20 35 40 50.
		{"wiki p30", msList(15, 20, 35, 40, 50), 30, 20 * time.Millisecond},
		{"wiki p40", msList(15, 20, 35, 40, 50), 40, 20 * time.Millisecond},
		{"wiki p50", msList(15, 20, 35, 40, 50), 50, 35 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
}

func TestPercentileOf1000(t *testing.T) {
	vals := make([]int, 1000)
	for i := range vals {
		vals[i] = i + 1
	}
	sorted := msList(vals...)
	for p, want := range map[float64]int{50: 500, 90: 900, 95: 950, 99: 990, 99.9: 999, 100: 1000} {
		if got := Percentile(sorted, p); got != time.Duration(want)*time.Millisecond {
			t.Errorf("p%v of 1..1000 ms = %v, want %d ms", p, got, want)
		}
	}
}

func TestRecorderSummary(t *testing.T) {
	r := NewRecorder()
	// Recorded out of order: the summary sorts.
	for _, v := range []int{30, 10, 50, 20, 40} {
		r.Record("orders", 201, time.Duration(v)*time.Millisecond)
	}
	r.Record("orders", 503, 100*time.Millisecond)
	r.Record("orders", NoResponse, 5*time.Second)

	got := r.Summary("orders")
	want := Summary{
		Count: 7,
		Codes: map[int]int{201: 5, 503: 1, NoResponse: 1},
		P50:   40 * time.Millisecond,
		P90:   5 * time.Second,
		P95:   5 * time.Second,
		P99:   5 * time.Second,
		Max:   5 * time.Second,
	}
	if got.Count != want.Count || got.P50 != want.P50 || got.P90 != want.P90 || got.P95 != want.P95 ||
		got.P99 != want.P99 || got.Max != want.Max {
		t.Errorf("Summary = %+v, want %+v", got, want)
	}
	if got, want := got.CodesString(), "err×1 201×5 503×1"; got != want {
		t.Errorf("CodesString = %q, want %q", got, want)
	}
	if got := r.Count("orders", 201); got != 5 {
		t.Errorf("Count(orders, 201) = %d, want 5", got)
	}
	if got := r.Total("orders"); got != 7 {
		t.Errorf("Total(orders) = %d, want 7", got)
	}
	if got := r.Summary("login"); got.Count != 0 || got.CodesString() != "-" {
		t.Errorf("Summary of an endpoint never recorded = %+v, want empty", got)
	}
}

func TestRecorderMerge(t *testing.T) {
	a, b := NewRecorder(), NewRecorder()
	a.Record("position", 200, 1*time.Millisecond)
	b.Record("position", 200, 3*time.Millisecond)
	b.Record("position", 404, 2*time.Millisecond)
	b.Record("enter", 200, 9*time.Millisecond)
	a.Merge(b)

	pos := a.Summary("position")
	if pos.Count != 3 || pos.Codes[200] != 2 || pos.Codes[404] != 1 || pos.P50 != 2*time.Millisecond || pos.Max != 3*time.Millisecond {
		t.Errorf("merged position = %+v, want 3 requests (200×2 404×1), p50 2ms, max 3ms", pos)
	}
	if got := a.Count("enter", 200); got != 1 {
		t.Errorf("merged enter 200s = %d, want 1", got)
	}
	// The source is left as it was.
	if got := b.Summary("position").Count; got != 2 {
		t.Errorf("source after Merge has %d position requests, want 2", got)
	}
}
