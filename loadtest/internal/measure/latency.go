package measure

import (
	"slices"
	"time"
)

// Latency is a distribution's nearest-rank percentiles; nanoseconds in
// JSON.
type Latency struct {
	Count int           `json:"count"`
	P50   time.Duration `json:"p50_ns"`
	P90   time.Duration `json:"p90_ns"`
	P99   time.Duration `json:"p99_ns"`
	Max   time.Duration `json:"max_ns"`
}

// NewLatency summarizes d, which it sorts.
func NewLatency(d []time.Duration) Latency {
	slices.Sort(d)
	return Latency{Count: len(d), P50: Percentile(d, 50), P90: Percentile(d, 90), P99: Percentile(d, 99), Max: Percentile(d, 100)}
}
