package readiness

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"waitingroom/internal/loop"
)

// Every is how often the readiness loop checks the dependencies.
const Every = 5 * time.Second

// Rooms is what the rooms check asks of the queue (queue.Queue).
type Rooms interface {
	MissingRooms(ctx context.Context, rooms []string) ([]string, error)
}

// Options are the checks' parts.
type Options struct {
	// Redis and Postgres ping the dependencies; Postgres is nil on an
	// instance without it (gateway mode without DATABASE_URL), which is
	// then neither checked nor reported.
	Redis, Postgres func(ctx context.Context) error
	// Queue and Rooms are the rooms check: the configured rooms (those
	// created at start) must exist in the queue.
	Queue Rooms
	Rooms []string
	// OnDependency hears each ping's outcome, OnMissing each rooms
	// check's count (the loop's; nil: nobody).
	OnDependency func(dependency string, up bool)
	OnMissing    func(rooms int)
}

// Checks are the instance's readiness checks.
type Checks struct{ o Options }

// New returns the checks. It does no I/O.
func New(o Options) *Checks {
	if o.OnDependency == nil {
		o.OnDependency = func(string, bool) {}
	}
	if o.OnMissing == nil {
		o.OnMissing = func(int) {}
	}
	return &Checks{o: o}
}

// Redis pings Redis.
func (c *Checks) Redis(ctx context.Context) error { return c.o.Redis(ctx) }

// Postgres pings Postgres; nil when the instance has none (UsesPostgres).
func (c *Checks) Postgres(ctx context.Context) error {
	if c.o.Postgres == nil {
		return nil
	}
	return c.o.Postgres(ctx)
}

// UsesPostgres reports whether Postgres is one of the checked dependencies.
func (c *Checks) UsesPostgres() bool { return c.o.Postgres != nil }

// Run is the readiness loop: every Every it runs the checks of GET
// /readyz (in parallel, a second each) and reports the pings of Redis and
// Postgres (waitingroom_dependency_up{dependency}) and the rooms check's
// count (waitingroom_rooms_missing), so an alert sees an instance that is
// not ready without probing /readyz itself. An instance without Postgres
// reports no postgres series at all.
func (c *Checks) Run(ctx context.Context) {
	deps := map[string]func(context.Context) error{"redis": c.o.Redis}
	if c.o.Postgres != nil {
		deps["postgres"] = c.o.Postgres
	}
	loop.NowAndEvery(ctx, Every, func(ctx context.Context) {
		var wg sync.WaitGroup
		for name, ping := range deps {
			wg.Go(func() {
				pctx, cancel := context.WithTimeout(ctx, time.Second)
				defer cancel()
				up := ping(pctx) == nil
				if ctx.Err() == nil { // a stop is no outage
					c.o.OnDependency(name, up)
				}
			})
		}
		wg.Go(func() {
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			if missing, err := c.missing(rctx); err == nil {
				c.o.OnMissing(len(missing))
			}
		})
		wg.Wait()
	})
}

// Rooms is /readyz's rooms check: nil when every configured room
// (Options.Rooms) exists in Redis, else an error naming those that do not.
//
// Redis answering is not enough to queue anyone: the admission loop
// creates the configured rooms, one interval after the start and again
// after Redis lost its data (a restart without persistence, a failover to
// an empty replica), and until then every enter to them answers 404. An
// instance in that state must not be given users. It is not in
// waitingroom_dependency_up, as Redis is up; it has its own gauge,
// waitingroom_rooms_missing, because the case where it lasts is invisible
// otherwise: Redis answers pings but refuses the loop's writes (out of
// memory under noeviction, a read-only replica) or the loop is not
// running, and the instance leaves the load balancer with every
// dependency up. A room lost for one admission interval is seldom
// sampled, so the gauge stays quiet for the ordinary recoveries — except
// at start, where the loop's first sample may come before the admission
// loop's first run and count the rooms it is about to create, until the
// next sample 5 s later (the alert waits 2 minutes).
//
// Only the configured rooms count: they are the ones the loop recreates (so
// waiting ends the failure) and those gateway mode's configured routes may
// name. A room created through the admin API is not recreated after a loss,
// and failing on it would keep every instance out for good. No configured
// room: the check passes without calling Redis.
func (c *Checks) Rooms(ctx context.Context) error {
	missing, err := c.missing(ctx)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return errors.New("missing: " + strings.Join(missing, ", "))
	}
	return nil
}

// missing are the configured rooms absent from Redis (one round trip).
func (c *Checks) missing(ctx context.Context) ([]string, error) {
	return c.o.Queue.MissingRooms(ctx, c.o.Rooms)
}
