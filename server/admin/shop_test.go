package admin

import "testing"

// TestQuantile: linear within the bucket the rank falls in, from 0 in
// the first; the last bound past it; nil without observations.
func TestQuantile(t *testing.T) {
	b := []bucketDoc{{0.01, 2}, {0.1, 6}, {1, 8}}
	for _, c := range []struct {
		name  string
		q     float64
		b     []bucketDoc
		count uint64
		want  float64 // -1: nil
	}{
		{"none", 0.5, b, 0, -1},
		{"no buckets", 0.5, nil, 3, -1},
		{"first bucket", 0.1, b, 10, 0.005},                // rank 1 of 2 in [0, 0.01]
		{"middle bucket", 0.5, b, 10, 0.01 + 0.09*3.0/4.0}, // rank 5: 3 of 4 in (0.01, 0.1]
		{"at a bound", 0.6, b, 10, 0.1},
		{"past the last bound", 0.9, b, 10, 1}, // rank 9 > 8: in +Inf
		{"empty bucket", 0.2, []bucketDoc{{0.01, 0}, {0.1, 0}, {1, 5}}, 5, 0.1 + 0.9*1.0/5.0},
	} {
		got := quantile(c.q, c.b, c.count)
		switch {
		case c.want < 0 && got != nil:
			t.Errorf("%s: got %v, want nil", c.name, *got)
		case c.want >= 0 && (got == nil || *got < c.want-1e-9 || *got > c.want+1e-9):
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
