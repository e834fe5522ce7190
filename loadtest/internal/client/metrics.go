package client

import (
	"context"
	"fmt"
	"net/http"

	"waitingroom/loadtest/internal/measure"
)

// metrics scrapes the admin port's /metrics.
func (m *Admin) metrics(ctx context.Context) (measure.Samples, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.Base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := m.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics: %s", resp.Status)
	}
	return measure.ParseMetrics(resp.Body)
}

// Histogram scrapes /metrics and reads the histogram name.
func (m *Admin) Histogram(ctx context.Context, name string) (measure.Histogram, error) {
	s, err := m.metrics(ctx)
	if err != nil {
		return measure.Histogram{}, err
	}
	return s.Histogram(name)
}

// ScrapeMetrics reads the server's process and stream metrics.
func ScrapeMetrics(ctx context.Context, adm *Admin) (map[string]float64, string) {
	return ScrapeNames(ctx, adm, measure.StreamMetrics...)
}

// ScrapeNames reads /metrics and sums each of names over its label sets; a
// name the server does not export is absent from the map. The string is why
// /metrics could not be read ("" when it was).
func ScrapeNames(ctx context.Context, adm *Admin, names ...string) (map[string]float64, string) {
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
