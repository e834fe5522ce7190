package report

import (
	"math"
	"strings"
	"testing"
)

func TestLineChartGaps(t *testing.T) {
	svg := string(LineChart("t", "ms", 4, Line{Name: "a", Color: "#000", X: []float64{0, 1, 2, 3, 4}, Y: []float64{1, 2, math.NaN(), 3, 4}}))
	if got := strings.Count(svg, "<polyline"); got != 2 {
		t.Errorf("a NaN splits the line: got %d polylines, want 2", got)
	}
	empty := string(LineChart("t", "ms", 4, Line{Name: "a", Color: "#000"}))
	if !strings.Contains(empty, "no data") {
		t.Errorf("an empty chart says so: %s", empty)
	}
}

func TestNiceStepAndTicks(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		n    int
		want float64
	}{{10_000, 5, 2000}, {47, 5, 10}, {0.9, 5, 0.2}, {0, 5, 1}, {120, 8, 20}, {11, 5, 2.5}} {
		if got := niceStep(tc.v, tc.n); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("niceStep(%v, %d): got %v, want %v", tc.v, tc.n, got, tc.want)
		}
	}
	for v, want := range map[float64]string{0: "0", 2.5: "2.5", 1500: "1500", 12_000: "12k", 2_500_000: "2.5M", 0.25: "0.25"} {
		if got := tickLabel(v); got != want {
			t.Errorf("tickLabel(%v): got %q, want %q", v, got, want)
		}
	}
}
