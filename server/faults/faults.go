package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/internal/loop"
)

// MaxOrderDelay bounds the injected order delay.
const MaxOrderDelay = 30 * time.Second

// RefreshEvery is how often Run reads the faults from Redis.
const RefreshEvery = 500 * time.Millisecond

// ErrDisabled: this instance was started without fault injection.
var ErrDisabled = errors.New("faults: fault injection is off")

// Faults are the injected faults of one instance: read from Redis, applied
// only when enabled.
type Faults struct {
	rdb     redis.UniversalClient
	key     string
	enabled bool
	delay   loop.Latest[time.Duration] // order delay in force here
	row     loop.Latest[time.Duration] // row-lock delay in force here
}

// New returns the faults stored under prefix (the server's key prefix);
// enabled is the operator's switch: off, the faults are never set here
// nor applied. It does no I/O.
func New(rdb redis.UniversalClient, prefix string, enabled bool) *Faults {
	return &Faults{rdb: rdb, key: key(prefix), enabled: enabled}
}

// Enabled reports whether this instance applies faults.
func (f *Faults) Enabled() bool { return f.enabled }

// OrderDelay is the delay this instance applies to orders now: 0 when
// fault injection is off.
func (f *Faults) OrderDelay() time.Duration {
	if !f.enabled {
		return 0
	}
	if d := f.delay.Get(); d != nil {
		return *d
	}
	return 0
}

// RowDelay is the delay this instance applies inside an order's row lock
// now (slept after the stock update, before the commit, so concurrent
// orders of one product wait for it: a hot row): 0 when fault injection
// is off.
func (f *Faults) RowDelay() time.Duration {
	if !f.enabled {
		return 0
	}
	if d := f.row.Get(); d != nil {
		return *d
	}
	return 0
}

// ReadRow returns the row-lock delay in force cluster-wide, from Redis (0
// when none was set).
func (f *Faults) ReadRow(ctx context.Context) (time.Duration, error) {
	ms, err := f.rdb.HGet(ctx, f.key, rowDelayField).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return time.Duration(ms) * time.Millisecond, err
}

// Read returns the order delay in force cluster-wide, from Redis (0 when
// none was set).
func (f *Faults) Read(ctx context.Context) (time.Duration, error) {
	ms, err := f.rdb.HGet(ctx, f.key, orderDelayField).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return time.Duration(ms) * time.Millisecond, err
}

// Load reads the faults from Redis into memory. A read never replaces one
// that began after it (loop.Latest), so a change set here is not undone
// by the periodic read under way meanwhile.
func (f *Faults) Load(ctx context.Context) error {
	read, readRow := f.delay.Begin(), f.row.Begin()
	d, err := f.Read(ctx)
	if err != nil {
		return err
	}
	r, err := f.ReadRow(ctx)
	if err != nil {
		return err
	}
	f.delay.Put(read, &d)
	f.row.Put(readRow, &r)
	return nil
}

// Run loads the faults at once and then every RefreshEvery until ctx is
// done; it returns at once when fault injection is off.
func (f *Faults) Run(ctx context.Context) {
	if !f.enabled {
		return
	}
	loop.NowAndEvery(ctx, RefreshEvery, func(ctx context.Context) { _ = f.Load(ctx) })
}

// SetOrderDelay sets the order delay cluster-wide (0 removes it) and at
// once on this instance. It returns ErrDisabled when fault injection is off
// here, and an error for a delay outside 0…MaxOrderDelay (callers validate
// first: the admin API answers 400 with its own message).
func (f *Faults) SetOrderDelay(ctx context.Context, d time.Duration) error {
	if !f.enabled {
		return ErrDisabled
	}
	if d < 0 || d > MaxOrderDelay {
		return fmt.Errorf("faults: order delay %v outside 0…%v", d, MaxOrderDelay)
	}
	if err := f.rdb.HSet(ctx, f.key, orderDelayField, d.Milliseconds()).Err(); err != nil {
		return err
	}
	f.delay.Put(f.delay.Begin(), &d) // as a read made now would find
	return nil
}

// SetRowDelay sets the row-lock delay cluster-wide (0 removes it) and at
// once on this instance, as SetOrderDelay does the order delay.
func (f *Faults) SetRowDelay(ctx context.Context, d time.Duration) error {
	if !f.enabled {
		return ErrDisabled
	}
	if d < 0 || d > MaxOrderDelay {
		return fmt.Errorf("faults: row delay %v outside 0…%v", d, MaxOrderDelay)
	}
	if err := f.rdb.HSet(ctx, f.key, rowDelayField, d.Milliseconds()).Err(); err != nil {
		return err
	}
	f.row.Put(f.row.Begin(), &d)
	return nil
}
