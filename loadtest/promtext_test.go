package main

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

const holdName = "waitingroom_db_connection_hold_seconds"

// The seed's before/after snapshots (hikaricp_connections_usage_seconds,
// renamed): 4,165 holds, 830.741 s in all, 200 ms on average, the longest
// 1.137 s — here in the bucket (1, 1.5].
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

func mustHistogram(tb testing.TB, text string) Histogram {
	tb.Helper()
	h, err := ParseHistogram(strings.NewReader(text), holdName)
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

func TestParseHistogramSumsLabelSets(t *testing.T) {
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
		t.Errorf("ParseHistogram = %+v, want %+v", got, want)
	}
}

func TestParseHistogramErrors(t *testing.T) {
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
			if h, err := ParseHistogram(strings.NewReader(tt.text), holdName); err == nil {
				t.Errorf("ParseHistogram(%q) = %+v, want an error", tt.text, h)
			}
		})
	}
}

func TestParseLabels(t *testing.T) {
	tests := []struct {
		in   string
		want map[string]string
		n    int
	}{
		{`{} 1`, map[string]string{}, 2},
		{`{le="0.5"} 1`, map[string]string{"le": "0.5"}, 10},
		{`{a="x\\y",b="say \"hi\"",c="l1\nl2"} 1`, map[string]string{"a": `x\y`, "b": `say "hi"`, "c": "l1\nl2"}, 36},
		{`{route="/rooms/:room/position",code="200",} 3`, map[string]string{"route": "/rooms/:room/position", "code": "200"}, 43},
	}
	for _, tt := range tests {
		got, n, err := parseLabels(tt.in)
		if err != nil || n != tt.n || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseLabels(%q) = %v, %d, %v; want %v, %d, nil", tt.in, got, n, err, tt.want, tt.n)
		}
	}
}

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
