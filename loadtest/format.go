package main

import (
	"fmt"
	"strconv"
	"time"
)

// ms formats d in milliseconds with one decimal: "12.3 ms".
func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", msf(d)) }

// msf is d in milliseconds.
func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// commas formats n with thousands separators: 1076 → "1,076".
func commas(n int) string {
	if n < 0 {
		return "-" + commas(-n)
	}
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
