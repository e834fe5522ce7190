// Package pace holds the tool's bounded waiting and looping: sleeps that
// end with their context, and a pool of workers over n calls.
package pace

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"waitingroom/internal/loop"
	"waitingroom/loadtest/internal/report"
)

// Sleep waits d or until ctx ends; it reports whether the full d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// SleepUntil waits until t or until ctx ends; it reports whether t came.
func SleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	return Sleep(ctx, d)
}

// ForEach calls fn(0)…fn(n−1) on conns workers, stops starting calls when
// ctx ends, prints progress every 5 s, and returns how many calls failed
// with the first failure.
func ForEach(ctx context.Context, what string, n, conns int, fn func(i int) error) error {
	var next, done, failed atomic.Int64
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	progress, stop := context.WithCancel(context.Background())
	go loop.Every(progress, 5*time.Second, func(context.Context) {
		fmt.Fprintf(os.Stderr, "loadtest: %s %s/%s (failed %d)\n", what, report.Commas(int(done.Load())), report.Commas(n), failed.Load())
	})
	for range min(conns, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil && ctx.Err() == nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, &err)
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	stop()
	if p := firstErr.Load(); p != nil {
		return fmt.Errorf("%s: %d of %d failed, the first: %w", what, failed.Load(), n, *p)
	}
	return nil
}
