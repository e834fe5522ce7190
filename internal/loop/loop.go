// Package loop runs the background loops of the waiting room: a function
// called every period, or paced by the wait it returns, until a context is
// done; and Start, the supervisor that runs an instance's loops and stops
// them all at shutdown, naming any that do not stop in time.
//
// It imports only the standard library, so any package may use it without
// a cycle: the module's internal/ holds such generic helpers, under every
// layer (cmd/waitingroom's TestImportRules).
//
// Concurrency: each call runs fn on the caller's goroutine, one call at a
// time, and returns once ctx is done (never while fn runs: a running fn is
// stopped by the same ctx). The caller owns the goroutine and waits for it;
// Start owns the goroutines of the loops it runs, one each.
package loop

import (
	"context"
	"time"
)

// Every calls fn every period until ctx is done; the first call comes one
// period after the start. Ticks missed while fn runs are dropped (a
// time.Ticker), so a slow fn does not cause a burst of calls.
func Every(ctx context.Context, period time.Duration, fn func(context.Context)) {
	EveryOrWake(ctx, period, nil, func(ctx context.Context, _ bool) { fn(ctx) })
}

// NowAndEvery calls fn at once, then every period until ctx is done: for
// loops that load state the caller needs as soon as possible.
func NowAndEvery(ctx context.Context, period time.Duration, fn func(context.Context)) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		fn(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// EveryOrWake calls fn every period and whenever wake receives, until ctx is
// done; ticked says which (true: the period elapsed). A nil wake never
// receives. Senders on wake should not block (a buffered channel of one and
// a select with default), so that wakes coalesce.
func EveryOrWake(ctx context.Context, period time.Duration, wake <-chan struct{}, fn func(ctx context.Context, ticked bool)) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		ticked := false
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-t.C:
			ticked = true
		}
		fn(ctx, ticked)
	}
}

// Paced waits first, then calls fn and waits what it returns before the
// next call, until ctx is done: for loops whose pace changes (back-off while
// a dependency is down, or a call aligned on a clock boundary).
func Paced(ctx context.Context, first time.Duration, fn func(context.Context) time.Duration) {
	t := time.NewTimer(first)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		t.Reset(fn(ctx))
	}
}
