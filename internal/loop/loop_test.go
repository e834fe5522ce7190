package loop_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"waitingroom/internal/loop"
)

// run starts body on its own goroutine inside a bubble, lets the fake clock
// advance by d, cancels and waits for body to return.
func run(t *testing.T, d time.Duration, body func(ctx context.Context)) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { body(ctx); close(done) }()
	time.Sleep(d)
	synctest.Wait()
	cancel()
	<-done
}

func TestEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []time.Duration
		start := time.Now()
		run(t, 3500*time.Millisecond, func(ctx context.Context) {
			loop.Every(ctx, time.Second, func(context.Context) { got = append(got, time.Since(start)) })
		})
		want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}
		if !slices.Equal(got, want) {
			t.Fatalf("calls at %v, want %v", got, want)
		}
	})
}

func TestNowAndEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []time.Duration
		start := time.Now()
		run(t, 2500*time.Millisecond, func(ctx context.Context) {
			loop.NowAndEvery(ctx, time.Second, func(context.Context) { got = append(got, time.Since(start)) })
		})
		want := []time.Duration{0, time.Second, 2 * time.Second}
		if !slices.Equal(got, want) {
			t.Fatalf("calls at %v, want %v", got, want)
		}
	})
}

func TestEveryOrWake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		wake := make(chan struct{}, 1)
		type call struct {
			at     time.Duration
			ticked bool
		}
		var got []call
		start := time.Now()
		run(t, 2500*time.Millisecond, func(ctx context.Context) {
			go func() {
				time.Sleep(1500 * time.Millisecond)
				wake <- struct{}{}
			}()
			loop.EveryOrWake(ctx, time.Second, wake, func(_ context.Context, ticked bool) {
				got = append(got, call{time.Since(start), ticked})
			})
		})
		want := []call{{time.Second, true}, {1500 * time.Millisecond, false}, {2 * time.Second, true}}
		if len(got) != len(want) {
			t.Fatalf("calls %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("calls %v, want %v", got, want)
			}
		}
	})
}

func TestPaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []time.Duration
		start := time.Now()
		wait := 100 * time.Millisecond
		run(t, time.Second, func(ctx context.Context) {
			loop.Paced(ctx, wait, func(context.Context) time.Duration {
				got = append(got, time.Since(start))
				wait *= 2 // back-off: 100, 200, 400 ms
				return wait
			})
		})
		want := []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, 700 * time.Millisecond}
		if !slices.Equal(got, want) {
			t.Fatalf("calls at %v, want %v", got, want)
		}
	})
}

// TestStopsWhenDone: a loop whose context is already done returns without
// calling fn (except NowAndEvery's first call, by its contract).
func TestStopsWhenDone(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	calls := 0
	fn := func(context.Context) { calls++ }
	loop.Every(ctx, time.Hour, fn)
	loop.EveryOrWake(ctx, time.Hour, nil, func(ctx context.Context, _ bool) { fn(ctx) })
	loop.Paced(ctx, time.Hour, func(ctx context.Context) time.Duration { fn(ctx); return time.Hour })
	if calls != 0 {
		t.Fatalf("%d calls after the context was done, want 0", calls)
	}
	loop.NowAndEvery(ctx, time.Hour, fn)
	if calls != 1 {
		t.Fatalf("NowAndEvery: %d calls, want the first one only", calls)
	}
}
