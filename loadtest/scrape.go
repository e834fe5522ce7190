package main

import (
	"context"
	"fmt"
	"net/http"

	"waitingroom/loadtest/internal/measure"
)

// metrics scrapes the admin port's /metrics.
func (m *admin) metrics(ctx context.Context) (measure.Samples, error) {
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
	return measure.ParseMetrics(resp.Body)
}

// histogram scrapes /metrics and reads the histogram name.
func (m *admin) histogram(ctx context.Context, name string) (measure.Histogram, error) {
	s, err := m.metrics(ctx)
	if err != nil {
		return measure.Histogram{}, err
	}
	return s.Histogram(name)
}

// scrapeMetrics reads the server's process and stream metrics.
func scrapeMetrics(ctx context.Context, adm *admin) (map[string]float64, string) {
	return scrapeNames(ctx, adm, measure.StreamMetrics...)
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
		if v, ok := s.Sum(n); ok {
			got[n] = v
		}
	}
	return got, ""
}
