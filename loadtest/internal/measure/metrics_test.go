package measure

import (
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
)

const holdName = "waitingroom_db_connection_hold_seconds"

// The seed's before/after snapshots (hikaricp_connections_usage_seconds,
// renamed): 4,165 holds, 830.741 s in all, 200 ms on average, the longest
// 1.137 s — here in the bucket (1, 1.5]. The second has no TYPE line: its
// samples are read by name all the same.
const (
	seedBefore = `# HELP waitingroom_db_connection_hold_seconds Time a Postgres connection is held.
# TYPE waitingroom_db_connection_hold_seconds histogram
waitingroom_db_connection_hold_seconds_bucket{le="0.1"} 20
waitingroom_db_connection_hold_seconds_bucket{le="0.5"} 25
waitingroom_db_connection_hold_seconds_bucket{le="1"} 25
waitingroom_db_connection_hold_seconds_bucket{le="1.5"} 25
waitingroom_db_connection_hold_seconds_bucket{le="+Inf"} 25
waitingroom_db_connection_hold_seconds_sum 2.45
waitingroom_db_connection_hold_seconds_count 25
`
	seedAfter = `waitingroom_db_connection_hold_seconds_bucket{le="0.1"} 1020
waitingroom_db_connection_hold_seconds_bucket{le="0.5"} 4000
waitingroom_db_connection_hold_seconds_bucket{le="1"} 4180
waitingroom_db_connection_hold_seconds_bucket{le="1.5"} 4190
waitingroom_db_connection_hold_seconds_bucket{le="+Inf"} 4190
waitingroom_db_connection_hold_seconds_sum 833.191
waitingroom_db_connection_hold_seconds_count 4190
`
)

func mustMetrics(tb testing.TB, text string) Samples {
	tb.Helper()
	m, err := ParseMetrics(strings.NewReader(text))
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

func mustHistogram(tb testing.TB, text string) Histogram {
	tb.Helper()
	h, err := mustMetrics(tb, text).Histogram(holdName)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

func TestSeedSnapshotDelta(t *testing.T) {
	d := mustHistogram(t, seedAfter).Sub(mustHistogram(t, seedBefore))
	if d.Count != 4165 {
		t.Errorf("Δcount = %v, want 4165", d.Count)
	}
	if got, want := d.Mean(), 830.741/4165; math.Abs(got-want) > 1e-9 {
		t.Errorf("mean = %.5f s, want %.5f s (830.741 / 4165)", got, want)
	}
	lo, hi, ok := d.MaxBucket()
	if !ok || lo != 1 || hi != 1.5 {
		t.Errorf("MaxBucket = (%v, %v], %v; want (1, 1.5], true", lo, hi, ok)
	}
}

// TestCapturedMetrics reads a /metrics text captured from the server after a
// surge of 300 users and a streams run of 100 (testdata/metrics.txt) and
// pins every figure the scenarios take from it.
func TestCapturedMetrics(t *testing.T) {
	b, err := os.ReadFile("testdata/metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	m := mustMetrics(t, string(b))

	hold, err := m.Histogram(holdName)
	if err != nil {
		t.Fatal(err)
	}
	if hold.Count != 436 || hold.Sum != 4.541223144000002 || len(hold.Buckets) != 17 {
		t.Errorf("hold = count %v, sum %v, %d buckets; want 436, 4.541223144000002, 17", hold.Count, hold.Sum, len(hold.Buckets))
	}
	if lo, hi, ok := hold.MaxBucket(); !ok || lo != 0.05 || hi != 0.1 {
		t.Errorf("hold MaxBucket = (%v, %v], %v; want (0.05, 0.1], true", lo, hi, ok)
	}
	if got, want := hold.Buckets[3], (Bucket{0.005, 150}); got != want {
		t.Errorf("hold bucket 3 = %+v, want %+v", got, want)
	}
	if got := hold.Buckets[len(hold.Buckets)-1]; !math.IsInf(got.LE, 1) || got.Count != 436 {
		t.Errorf("hold top bucket = %+v, want +Inf 436", got)
	}

	pool, err := m.Histogram("waitingroom_db_pool_acquire_wait_seconds")
	if err != nil {
		t.Fatal(err)
	}
	if pool.Count != 436 || pool.Sum != 0.25895479600000043 {
		t.Errorf("pool wait = count %v, sum %v; want 436, 0.25895479600000043", pool.Count, pool.Sum)
	}

	// A labelled histogram is summed over its label sets bucket by bucket.
	reqs, err := m.Histogram("waitingroom_http_request_duration_seconds")
	if err != nil {
		t.Fatal(err)
	}
	if reqs.Count != 1355 || len(reqs.Buckets) != 14 || reqs.Buckets[3] != (Bucket{0.005, 880}) {
		t.Errorf("requests = count %v, %d buckets, bucket 3 %+v; want 1355, 14, {0.005 880}", reqs.Count, len(reqs.Buckets), reqs.Buckets[3])
	}

	want := map[string]float64{
		MetricRSS:                         3.7138432e+07,
		MetricCPU:                         1.37,
		MetricConns:                       100, // transport="sse"
		MetricDropped:                     0,
		MetricBcrypt:                      5,  // a histogram's _count, read as a sample
		"waitingroom_db_pool_connections": 70, // summed over state
	}
	for name, w := range want {
		if got, ok := m.Sum(name); !ok || got != w {
			t.Errorf("sum(%s) = %v, %v; want %v, true", name, got, ok, w)
		}
	}
	if got, ok := m.Sum("not_exported"); ok {
		t.Errorf("sum(not_exported) = %v, true; want absent", got)
	}
}

func TestHistogramSumsLabelSets(t *testing.T) {
	text := `# a comment with waitingroom_db_connection_hold_seconds_count 99 in it
other_metric_total 7
waitingroom_db_connection_hold_seconds_bucket{pool="a",le="0.005"} 1
waitingroom_db_connection_hold_seconds_bucket{pool="b",le="0.005"} 2 1700000000000
waitingroom_db_connection_hold_seconds_bucket{le="+Inf",pool="a"} 3
waitingroom_db_connection_hold_seconds_bucket{ le="+Inf" , pool="b,}\"x\"" } 4
waitingroom_db_connection_hold_seconds_sum{pool="a"} 0.25
waitingroom_db_connection_hold_seconds_sum{pool="b"} 0.5
waitingroom_db_connection_hold_seconds_count{pool="a"} 3
waitingroom_db_connection_hold_seconds_count{pool="b"} 4
waitingroom_db_connection_hold_seconds_created 1.7e+09
`
	got := mustHistogram(t, text)
	want := Histogram{Sum: 0.75, Count: 7, Buckets: []Bucket{{0.005, 3}, {math.Inf(1), 7}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("histogram = %+v, want %+v", got, want)
	}
}

func TestHistogramErrors(t *testing.T) {
	tests := []struct{ name, text string }{
		{"absent", "other_seconds_sum 1\n"},
		{"value not a number", holdName + "_sum abc\n"},
		{"le not a number", holdName + `_bucket{le="x"} 1` + "\n"},
		{"unterminated labels", holdName + `_bucket{le="1" 1` + "\n"},
		{"unterminated value", holdName + `_bucket{le="1} 1` + "\n"},
		{"label without quotes", holdName + `_bucket{le=1} 1` + "\n"},
		{"no value", holdName + "_count\n"},
		{"too many fields", holdName + "_count 1 2 3\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseMetrics(strings.NewReader(tt.text))
			if err != nil {
				return
			}
			if h, err := m.Histogram(holdName); err == nil {
				t.Errorf("histogram of %q = %+v, want an error", tt.text, h)
			}
		})
	}
}

func TestSum(t *testing.T) {
	text := `# HELP process_resident_memory_bytes Resident memory size in bytes.
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 1.2345678e+08
process_cpu_seconds_total 12.5
waitingroom_stream_connections{transport="sse"} 9000
waitingroom_stream_connections{transport="ws"} 1000
waitingroom_stream_connections_total 5
waitingroom_stream_dropped_total 3 1764417600000
# waitingroom_stream_dropped_total 99 in a comment
escaped{a="x\\y",b="say \"hi\"",c="l1\nl2"} 2
escaped{a="x"} 3
`
	m := mustMetrics(t, text)
	want := map[string]float64{
		"process_resident_memory_bytes":    123456780,
		"process_cpu_seconds_total":        12.5,
		"waitingroom_stream_connections":   10000, // both transports; not the _total of the same prefix
		"waitingroom_stream_dropped_total": 3,     // the timestamp is not the value
		"escaped":                          5,     // escaped label values do not end the sample
	}
	for name, w := range want {
		if got, ok := m.Sum(name); !ok || got != w {
			t.Errorf("sum(%s) = %v, %v; want %v, true", name, got, ok, w)
		}
	}
}

// A malformed line fails the whole text, even one of a metric the tool does
// not read: that exposition is broken (see ParseMetrics).
func TestParseMetricsMalformed(t *testing.T) {
	for _, text := range []string{
		"process_cpu_seconds_total twelve\n",
		"other_metric twelve\nprocess_cpu_seconds_total 1\n",
	} {
		if m, err := ParseMetrics(strings.NewReader(text)); err == nil {
			t.Errorf("parseMetrics(%q) = %v, want an error", text, m)
		}
	}
}
