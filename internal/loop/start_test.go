package loop

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestStart: every loop runs until stop, which waits for all of them;
// a loop that does not return in time is named in the error.
func TestStart(t *testing.T) {
	var running atomic.Int64
	started := make(chan struct{}, 2)
	work := func(ctx context.Context) {
		running.Add(1)
		started <- struct{}{}
		<-ctx.Done()
		running.Add(-1)
	}
	stop := Start([]Loop{{Name: "a", Run: work}, {Name: "b", Run: work}})
	<-started
	<-started
	if err := stop(t.Context()); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if got := running.Load(); got != 0 {
		t.Fatalf("loops still running after stop: %d", got)
	}

	release := make(chan struct{})
	stuck := Start([]Loop{
		{Name: "quick", Run: func(ctx context.Context) { <-ctx.Done() }},
		{Name: "stuck", Run: func(context.Context) { <-release }},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	err := stuck(ctx)
	close(release)
	if err == nil || !strings.Contains(err.Error(), "shutdown timed out") || !strings.Contains(err.Error(), "stuck") || strings.Contains(err.Error(), "quick") {
		t.Fatalf("stop with a stuck loop: %v, want a timeout naming stuck only", err)
	}
}

// TestStartLoopsThatReturnAtOnce: a loop with nothing to do returns at
// once (presence without an idle timeout) while the others are started.
func TestStartLoopsThatReturnAtOnce(t *testing.T) {
	var loops []Loop
	for i := range 20 {
		loops = append(loops, Loop{Name: string(rune('a' + i)), Run: func(context.Context) {}})
	}
	stop := Start(loops)
	if err := stop(t.Context()); err != nil {
		t.Fatal(err)
	}
}
