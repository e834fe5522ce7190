package measure

import (
	"math"
	"reflect"
	"testing"
)

func TestMaxBucket(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name   string
		h      Histogram
		lo, hi float64
		ok     bool
	}{
		{"no observations", Histogram{Buckets: []Bucket{{0.1, 0}, {inf, 0}}}, 0, 0, false},
		{"all in the first bucket", Histogram{Count: 5, Buckets: []Bucket{{0.1, 5}, {1, 5}, {inf, 5}}}, 0, 0.1, true},
		{"top sample in the middle", Histogram{Count: 5, Buckets: []Bucket{{0.1, 2}, {1, 5}, {inf, 5}}}, 0.1, 1, true},
		{"above every finite bound", Histogram{Count: 5, Buckets: []Bucket{{0.1, 2}, {1, 4}, {inf, 5}}}, 1, inf, true},
		{"no +Inf bucket exposed", Histogram{Count: 5, Buckets: []Bucket{{0.1, 2}, {1, 4}}}, 1, inf, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi, ok := tt.h.MaxBucket()
			if lo != tt.lo || hi != tt.hi || ok != tt.ok {
				t.Errorf("MaxBucket = (%v, %v], %v; want (%v, %v], %v", lo, hi, ok, tt.lo, tt.hi, tt.ok)
			}
		})
	}
}

func TestSubMissingBuckets(t *testing.T) {
	// A bucket the first snapshot did not have counts from zero.
	before := Histogram{Sum: 1, Count: 2, Buckets: []Bucket{{math.Inf(1), 2}}}
	after := Histogram{Sum: 4, Count: 5, Buckets: []Bucket{{0.5, 3}, {math.Inf(1), 5}}}
	got := after.Sub(before)
	want := Histogram{Sum: 3, Count: 3, Buckets: []Bucket{{0.5, 3}, {math.Inf(1), 3}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Sub = %+v, want %+v", got, want)
	}
	if got.Mean() != 1 {
		t.Errorf("Mean = %v, want 1", got.Mean())
	}
}

func TestHistogramQuantile(t *testing.T) {
	h := Histogram{Count: 100, Buckets: []Bucket{{LE: 0.001, Count: 50}, {LE: 0.01, Count: 90}, {LE: 0.1, Count: 99}, {LE: math.Inf(1), Count: 100}}}
	for _, tt := range []struct{ q, want float64 }{
		{0.5, 0.001}, {0.25, 0.0005}, {0.9, 0.01}, {0.95, 0.01 + 0.09*5/9}, {1, 0.1},
	} {
		if got := h.Quantile(tt.q); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("Quantile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if got := (Histogram{}).Quantile(0.99); got != 0 {
		t.Errorf("Quantile of nothing = %v", got)
	}
}
