package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"waitingroom/loadtest/internal/pace"
)

// AwaitReady polls adminBase/readyz until it answers 200, at most within.
func AwaitReady(ctx context.Context, adminBase string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	hc := &http.Client{Timeout: 2 * time.Second}
	defer hc.CloseIdleConnections()
	last := errors.New("no answer yet")
	for {
		if last = ReadyzOK(ctx, hc, adminBase); last == nil {
			return nil
		}
		if !pace.Sleep(ctx, 200*time.Millisecond) {
			return fmt.Errorf("%s/readyz not ready within %v: %w", adminBase, within, last)
		}
	}
}

// ReadyzOK is nil when GET base/readyz answers 200.
func ReadyzOK(ctx context.Context, hc *http.Client, base string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
	if err != nil {
		return err
	}
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /readyz: %s", res.Status)
	}
	return nil
}
