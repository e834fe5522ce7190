package main

import (
	"reflect"
	"strings"
	"testing"
)

func TestSumSamples(t *testing.T) {
	text := `# HELP process_resident_memory_bytes Resident memory size in bytes.
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 1.2345678e+08
process_cpu_seconds_total 12.5
waitingroom_stream_connections{transport="sse"} 9000
waitingroom_stream_connections{transport="ws"} 1000
waitingroom_stream_connections_total 5
waitingroom_stream_dropped_total 3 1764417600000
# waitingroom_stream_dropped_total 99 in a comment
`
	got, err := SumSamples(strings.NewReader(text),
		"process_resident_memory_bytes", "process_cpu_seconds_total", "waitingroom_stream_connections",
		"waitingroom_stream_dropped_total", "not_exported")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"process_resident_memory_bytes":    123456780,
		"process_cpu_seconds_total":        12.5,
		"waitingroom_stream_connections":   10000, // both transports; not the _total of the same prefix
		"waitingroom_stream_dropped_total": 3,     // the timestamp is not the value
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}

func TestSumSamplesMalformed(t *testing.T) {
	if _, err := SumSamples(strings.NewReader("process_cpu_seconds_total twelve\n"), "process_cpu_seconds_total"); err == nil {
		t.Error("a non-numeric value was accepted")
	}
	// A malformed line of a metric not asked for is not our business.
	if _, err := SumSamples(strings.NewReader("other_metric twelve\nprocess_cpu_seconds_total 1\n"), "process_cpu_seconds_total"); err != nil {
		t.Errorf("unrelated malformed line: %v", err)
	}
}
