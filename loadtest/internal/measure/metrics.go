package measure

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Reading the server's /metrics: the Prometheus text exposition is parsed by
// expfmt (the library the server's own client_golang writes it with) and
// flattened to samples by expfmt.ExtractSamples, so that a histogram is read
// as the text shows it — name_bucket{le="…"}, name_sum, name_count — whether
// or not a TYPE line announced it. Every figure is a sum over label sets:
// the tool wants the instance's totals (both transports, every route).
//
// A text expfmt cannot parse is an error as a whole, even when the broken
// line belongs to a metric the tool does not read: that exposition is
// broken, and Prometheus would refuse the scrape too.

// Metrics read from the server's /metrics.
const (
	MetricRSS     = "process_resident_memory_bytes"
	MetricCPU     = "process_cpu_seconds_total"
	MetricConns   = "waitingroom_stream_connections"
	MetricDropped = "waitingroom_stream_dropped_total"
	// MetricBcrypt counts the server's BCrypt verifications (a histogram's
	// _count, read as a sample).
	MetricBcrypt = "waitingroom_bcrypt_seconds_count"
)

// StreamMetrics are the process and stream metrics the streams and surge
// scenarios sample.
var StreamMetrics = []string{MetricRSS, MetricCPU, MetricConns, MetricDropped}

// Samples is one read of /metrics: its samples by metric name.
type Samples map[string][]*model.Sample

// ParseMetrics reads Prometheus text r into its samples.
func ParseMetrics(r io.Reader) (Samples, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	vec, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{}, slices.Collect(maps.Values(fams))...)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	m := Samples{}
	for _, s := range vec {
		name := string(s.Metric[model.MetricNameLabel])
		m[name] = append(m[name], s)
	}
	return m, nil
}

// Sum is the sum of name's samples over all label sets (a gauge or counter
// such as waitingroom_stream_connections{transport="sse"} and
// {transport="ws"}); ok is false when the server does not export name.
func (m Samples) Sum(name string) (v float64, ok bool) {
	for _, s := range m[name] {
		v += float64(s.Value)
	}
	return v, len(m[name]) > 0
}

// Histogram is the histogram name: its name_sum, name_count and
// name_bucket{le="…"} samples, each summed over any other labels. It fails
// when the text has none of them.
func (m Samples) Histogram(name string) (Histogram, error) {
	sum, okSum := m.Sum(name + "_sum")
	count, okCount := m.Sum(name + "_count")
	byLE := map[float64]float64{}
	for _, s := range m[name+"_bucket"] {
		le, err := strconv.ParseFloat(string(s.Metric[model.BucketLabel]), 64)
		if err != nil {
			return Histogram{}, fmt.Errorf("metrics: %s_bucket: le=%q is not a number", name, s.Metric[model.BucketLabel])
		}
		byLE[le] += float64(s.Value)
	}
	if !okSum && !okCount && len(byLE) == 0 {
		return Histogram{}, fmt.Errorf("metrics: no histogram %s", name)
	}
	h := Histogram{Sum: sum, Count: count}
	for le, n := range byLE {
		h.Buckets = append(h.Buckets, Bucket{LE: le, Count: n})
	}
	slices.SortFunc(h.Buckets, func(a, b Bucket) int { return cmp.Compare(a.LE, b.LE) })
	return h, nil
}
