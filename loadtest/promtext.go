package main

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Histogram is one Prometheus histogram read from the text exposition
// format, summed over its label sets. Two snapshots taken before and after a
// run give the run's own observations: after.Sub(before).
type Histogram struct {
	Sum     float64
	Count   float64
	Buckets []Bucket // cumulative, ascending by LE; normally the last is +Inf
}

// Bucket is a cumulative histogram bucket: Count observations were ≤ LE.
type Bucket struct {
	LE    float64
	Count float64
}

// ParseHistogram reads the histogram name from Prometheus text r: its
// name_sum, name_count and name_bucket{le="…"} samples, each summed over
// any other labels. It fails when r has none of them.
func ParseHistogram(r io.Reader, name string) (Histogram, error) {
	var h Histogram
	byLE := map[float64]float64{}
	found := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, name+"_") { // also skips comments and blank lines
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return Histogram{}, fmt.Errorf("promtext: %w", err)
		}
		switch s.name {
		case name + "_sum":
			h.Sum += s.value
		case name + "_count":
			h.Count += s.value
		case name + "_bucket":
			le, err := strconv.ParseFloat(s.labels["le"], 64)
			if err != nil {
				return Histogram{}, fmt.Errorf("promtext: %s: le=%q is not a number", s.name, s.labels["le"])
			}
			byLE[le] += s.value
		default:
			continue
		}
		found = true
	}
	if err := sc.Err(); err != nil {
		return Histogram{}, fmt.Errorf("promtext: %w", err)
	}
	if !found {
		return Histogram{}, fmt.Errorf("promtext: no histogram %s", name)
	}
	for le, n := range byLE {
		h.Buckets = append(h.Buckets, Bucket{LE: le, Count: n})
	}
	slices.SortFunc(h.Buckets, func(a, b Bucket) int { return cmp.Compare(a.LE, b.LE) })
	return h, nil
}

// Sub returns h − before: what was observed between the two snapshots.
// A negative Count means the counters were reset (the server restarted).
func (h Histogram) Sub(before Histogram) Histogram {
	prev := make(map[float64]float64, len(before.Buckets))
	for _, b := range before.Buckets {
		prev[b.LE] = b.Count
	}
	d := Histogram{Sum: h.Sum - before.Sum, Count: h.Count - before.Count}
	for _, b := range h.Buckets {
		d.Buckets = append(d.Buckets, Bucket{LE: b.LE, Count: b.Count - prev[b.LE]})
	}
	return d
}

// Mean is Sum ÷ Count, or 0 without observations.
func (h Histogram) Mean() float64 {
	if h.Count <= 0 {
		return 0
	}
	return h.Sum / h.Count
}

// MaxBucket bounds the largest observation by bucket bounds: it lies in
// (lo, hi], hi being the lowest bound whose cumulative count reaches Count —
// the highest bucket that holds any observation. hi is +Inf when the largest
// observation is above every finite bound. ok is false without observations.
func (h Histogram) MaxBucket() (lo, hi float64, ok bool) {
	if h.Count <= 0 {
		return 0, 0, false
	}
	for _, b := range h.Buckets {
		if b.Count >= h.Count {
			return lo, b.LE, true
		}
		lo = b.LE
	}
	return lo, math.Inf(1), true
}

// sample is one line of the text format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// parseSample parses `name{label="value",…} value [timestamp]`.
func parseSample(line string) (sample, error) {
	i := strings.IndexAny(line, "{ \t")
	if i <= 0 {
		return sample{}, fmt.Errorf("malformed sample %q", line)
	}
	s := sample{name: line[:i]}
	rest := line[i:]
	if rest[0] == '{' {
		labels, n, err := parseLabels(rest)
		if err != nil {
			return sample{}, fmt.Errorf("%s: %w", s.name, err)
		}
		s.labels, rest = labels, rest[n:]
	}
	fields := strings.Fields(rest)
	if len(fields) != 1 && len(fields) != 2 { // value and an optional timestamp
		return sample{}, fmt.Errorf("%s: want a value and an optional timestamp, got %q", s.name, rest)
	}
	v, err := strconv.ParseFloat(fields[0], 64) // also reads +Inf, -Inf and NaN
	if err != nil {
		return sample{}, fmt.Errorf("%s: value %q is not a number", s.name, fields[0])
	}
	s.value = v
	return s, nil
}

var errLabels = errors.New("malformed labels")

// parseLabels parses the `{…}` at the start of s and returns the labels and
// the number of bytes it took. Values may hold escaped \" \\ \n, commas and
// braces.
func parseLabels(s string) (map[string]string, int, error) {
	labels := map[string]string{}
	i := 1 // past '{'
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == ',') {
			i++
		}
		if i >= len(s) {
			return nil, 0, errLabels
		}
		if s[i] == '}' {
			return labels, i + 1, nil
		}
		eq := strings.IndexByte(s[i:], '=')
		if eq <= 0 || i+eq+1 >= len(s) || s[i+eq+1] != '"' {
			return nil, 0, errLabels
		}
		key := strings.TrimSpace(s[i : i+eq])
		var val strings.Builder
		for i += eq + 2; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				if s[i] == 'n' {
					val.WriteByte('\n')
					continue
				}
			}
			val.WriteByte(s[i])
		}
		if i >= len(s) {
			return nil, 0, errLabels
		}
		labels[key] = val.String()
		i++ // past the closing quote
	}
}
