package faults_test

import (
	"errors"
	"testing"
	"time"

	"waitingroom/queue/queuetest"
	"waitingroom/server/faults"
)

// TestOrderDelay: a delay set on one instance is read and loaded by
// another; an instance without fault injection refuses to set it and never
// applies it, whatever Redis holds.
func TestOrderDelay(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	ctx := t.Context()
	on, other, off := faults.New(rdb, prefix, true), faults.New(rdb, prefix, true), faults.New(rdb, prefix, false)
	if d, err := other.Read(ctx); err != nil || d != 0 {
		t.Fatalf("Read before any set = %v, %v; want 0", d, err)
	}
	if err := on.SetOrderDelay(ctx, 250*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := on.OrderDelay(); got != 250*time.Millisecond {
		t.Fatalf("setter's OrderDelay = %v, want 250ms at once", got)
	}
	if got := other.OrderDelay(); got != 0 {
		t.Fatalf("other's OrderDelay before a load = %v, want 0", got)
	}
	for _, f := range []*faults.Faults{other, off} {
		if err := f.Load(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := other.OrderDelay(); got != 250*time.Millisecond {
		t.Fatalf("other's OrderDelay after a load = %v, want 250ms", got)
	}
	if got := off.OrderDelay(); got != 0 {
		t.Fatalf("disabled instance applies %v, want 0", got)
	}
	if err := off.SetOrderDelay(ctx, time.Second); !errors.Is(err, faults.ErrDisabled) {
		t.Fatalf("disabled SetOrderDelay: %v, want ErrDisabled", err)
	}
	for _, d := range []time.Duration{-time.Millisecond, faults.MaxOrderDelay + time.Millisecond} {
		if err := on.SetOrderDelay(ctx, d); err == nil {
			t.Fatalf("SetOrderDelay(%v) accepted", d)
		}
	}
	if d, _ := other.Read(ctx); d != 250*time.Millisecond {
		t.Fatalf("refused sets changed the delay to %v", d)
	}
}

// TestRowDelay: the row-lock delay travels like the order delay, and
// setting one leaves the other.
func TestRowDelay(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	ctx := t.Context()
	on, other := faults.New(rdb, prefix, true), faults.New(rdb, prefix, true)
	if err := on.SetOrderDelay(ctx, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := on.SetRowDelay(ctx, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := other.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := other.RowDelay(), 10*time.Millisecond; got != want {
		t.Fatalf("other's RowDelay = %v, want %v", got, want)
	}
	if got := other.OrderDelay(); got != 300*time.Millisecond {
		t.Fatalf("other's OrderDelay = %v, want 300ms", got)
	}
	if err := faults.New(rdb, prefix, false).SetRowDelay(ctx, time.Millisecond); !errors.Is(err, faults.ErrDisabled) {
		t.Fatalf("disabled SetRowDelay: %v", err)
	}
}
