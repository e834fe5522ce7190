package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// SumSamples reads Prometheus text r and returns, for each of names found,
// the sum of its samples over all label sets (a gauge or counter such as
// waitingroom_stream_connections{transport="sse"} and {transport="ws"}).
// A name without samples is absent from the map: the server may not export
// it.
func SumSamples(r io.Reader, names ...string) (map[string]float64, error) {
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	got := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.IndexAny(line, "{ \t")
		if i <= 0 || !want[line[:i]] {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return nil, fmt.Errorf("promtext: %w", err)
		}
		got[s.name] += s.value
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("promtext: %w", err)
	}
	return got, nil
}
