package report

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"
)

// Ms formats d in milliseconds with one decimal: "12.3 ms".
func Ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", Msf(d)) }

// Msf is d in milliseconds.
func Msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Commas formats n with thousands separators: 1076 → "1,076".
func Commas(n int) string {
	if n < 0 {
		return "-" + Commas(-n)
	}
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Ratio is a ÷ b, NaN when b is not positive.
func Ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// Counts lists m as " (reason ×n, …)", most frequent first; "" when
// m is empty.
func Counts(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		if a < b {
			return -1
		}
		return 1
	})
	s := " ("
	for i, k := range keys {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s ×%d", k, m[k])
	}
	return s + ")"
}
