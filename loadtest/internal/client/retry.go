package client

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/pace"
)

// StatusError is an HTTP answer other than the one wanted (a stream's, a
// 2xx).
type StatusError int

func (e StatusError) Error() string { return fmt.Sprintf("HTTP %d", int(e)) }

// OrElse is err, or alt when err is nil.
func OrElse(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}

// WithRetry calls fn again, at most 5 times in all, while it answers 429,
// 503 or nothing, pausing 0.2 s, 0.4 s, … up to 2 s in between.
func WithRetry(ctx context.Context, fn func() (int, error)) (int, error) {
	pause := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		code, err := fn()
		again := code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable || code == measure.NoResponse
		if !again || attempt == 5 || !pace.Sleep(ctx, pause) {
			return code, err
		}
		pause = min(2*pause, 2*time.Second)
	}
}
