// Package measure holds what the tool measures with: request latencies and
// status codes by endpoint (Recorder, Summary, nearest-rank percentiles),
// the server's /metrics read into samples and histograms, and Redis's own
// INFO counters (--redis) turned into a cost per request.
package measure

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// NoResponse is the status code recorded for a request that got no response
// (refused, reset, timed out).
const NoResponse = 0

// Recorder collects request latencies and status codes per endpoint. It is
// safe for concurrent use; closed-loop workers that push tens of thousands of
// requests a second each keep their own and Merge them at the end, so the
// measurement never waits on a shared lock.
type Recorder struct {
	mu  sync.Mutex
	eps map[string]*series
}

type series struct {
	lat   []time.Duration
	codes map[int]int
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{eps: map[string]*series{}} }

// Record adds one request to endpoint: its status code (NoResponse without a
// response) and how long it took.
func (r *Recorder) Record(endpoint string, code int, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.series(endpoint)
	s.lat = append(s.lat, d)
	s.codes[code]++
}

func (r *Recorder) series(endpoint string) *series {
	s, ok := r.eps[endpoint]
	if !ok {
		s = &series{codes: map[int]int{}}
		r.eps[endpoint] = s
	}
	return s
}

// Merge adds everything o recorded to r.
func (r *Recorder) Merge(o *Recorder) {
	o.mu.Lock()
	defer o.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	for ep, src := range o.eps {
		s := r.series(ep)
		s.lat = append(s.lat, src.lat...)
		for c, n := range src.codes {
			s.codes[c] += n
		}
	}
}

// Drain empties r and returns the status codes it had recorded, by
// endpoint: code → requests.
func (r *Recorder) Drain() map[string]map[int]int {
	r.mu.Lock()
	eps := r.eps
	r.eps = map[string]*series{}
	r.mu.Unlock()
	out := make(map[string]map[int]int, len(eps))
	for ep, s := range eps {
		out[ep] = s.codes
	}
	return out
}

// Count is how many requests to endpoint ended with code.
func (r *Recorder) Count(endpoint string, code int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.eps[endpoint]; ok {
		return s.codes[code]
	}
	return 0
}

// Total is how many requests to endpoint were recorded.
func (r *Recorder) Total(endpoint string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.eps[endpoint]; ok {
		return len(s.lat)
	}
	return 0
}

// Summary is one endpoint's request count, status codes and latency
// percentiles (nearest rank). Durations are nanoseconds in JSON.
type Summary struct {
	Count int           `json:"count"`
	Codes map[int]int   `json:"codes"` // status code → requests; 0: no response
	P50   time.Duration `json:"p50_ns"`
	P90   time.Duration `json:"p90_ns"`
	P95   time.Duration `json:"p95_ns"`
	P99   time.Duration `json:"p99_ns"`
	Max   time.Duration `json:"max_ns"`
}

// Summary summarizes endpoint (the zero Summary when nothing was recorded).
func (r *Recorder) Summary(endpoint string) Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.eps[endpoint]
	if !ok {
		return Summary{Codes: map[int]int{}}
	}
	lat := slices.Clone(s.lat)
	slices.Sort(lat)
	return Summary{
		Count: len(lat),
		Codes: maps.Clone(s.codes),
		P50:   Percentile(lat, 50),
		P90:   Percentile(lat, 90),
		P95:   Percentile(lat, 95),
		P99:   Percentile(lat, 99),
		Max:   Percentile(lat, 100),
	}
}

// Percentile is the nearest-rank p-th percentile (0 < p ≤ 100) of sorted:
// the smallest value with at least p% of the values at or below it. It is 0
// for an empty slice.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	// p·n is computed before dividing so that whole ranks stay exact
	// (95·20/100 is 19, where 0.95·20 in floating point is not).
	rank := int(math.Ceil(p * float64(n) / 100))
	return sorted[min(max(rank, 1), n)-1]
}

// CodesString lists status codes in ascending order, e.g. "201×1076 404×3 err×1".
func (s Summary) CodesString() string {
	codes := make([]int, 0, len(s.Codes))
	for c := range s.Codes {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	parts := make([]string, 0, len(codes))
	for _, c := range codes {
		name := fmt.Sprint(c)
		if c == NoResponse {
			name = "err"
		}
		parts = append(parts, fmt.Sprintf("%s×%d", name, s.Codes[c]))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}
