package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
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
	metricRSS     = "process_resident_memory_bytes"
	metricCPU     = "process_cpu_seconds_total"
	metricConns   = "waitingroom_stream_connections"
	metricDropped = "waitingroom_stream_dropped_total"
)

// streamMetrics are the process and stream metrics the streams and surge
// scenarios sample.
var streamMetrics = []string{metricRSS, metricCPU, metricConns, metricDropped}

// metricSamples is one read of /metrics: its samples by metric name.
type metricSamples map[string][]*model.Sample

// parseMetrics reads Prometheus text r into its samples.
func parseMetrics(r io.Reader) (metricSamples, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	vec, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{}, slices.Collect(maps.Values(fams))...)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	m := metricSamples{}
	for _, s := range vec {
		name := string(s.Metric[model.MetricNameLabel])
		m[name] = append(m[name], s)
	}
	return m, nil
}

// sum is the sum of name's samples over all label sets (a gauge or counter
// such as waitingroom_stream_connections{transport="sse"} and
// {transport="ws"}); ok is false when the server does not export name.
func (m metricSamples) sum(name string) (v float64, ok bool) {
	for _, s := range m[name] {
		v += float64(s.Value)
	}
	return v, len(m[name]) > 0
}

// histogram is the histogram name: its name_sum, name_count and
// name_bucket{le="…"} samples, each summed over any other labels. It fails
// when the text has none of them.
func (m metricSamples) histogram(name string) (Histogram, error) {
	sum, okSum := m.sum(name + "_sum")
	count, okCount := m.sum(name + "_count")
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

// metrics scrapes the admin port's /metrics.
func (m *admin) metrics(ctx context.Context) (metricSamples, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := m.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics: %s", resp.Status)
	}
	return parseMetrics(resp.Body)
}

// histogram scrapes /metrics and reads the histogram name.
func (m *admin) histogram(ctx context.Context, name string) (Histogram, error) {
	s, err := m.metrics(ctx)
	if err != nil {
		return Histogram{}, err
	}
	return s.histogram(name)
}

// scrapeMetrics reads the server's process and stream metrics.
func scrapeMetrics(ctx context.Context, adm *admin) (map[string]float64, string) {
	return scrapeNames(ctx, adm, streamMetrics...)
}

// scrapeNames reads /metrics and sums each of names over its label sets; a
// name the server does not export is absent from the map. The string is why
// /metrics could not be read ("" when it was).
func scrapeNames(ctx context.Context, adm *admin, names ...string) (map[string]float64, string) {
	s, err := adm.metrics(ctx)
	if err != nil {
		return nil, err.Error()
	}
	got := map[string]float64{}
	for _, n := range names {
		if v, ok := s.sum(n); ok {
			got[n] = v
		}
	}
	return got, ""
}
