package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"waitingroom/internal/loop"
	"waitingroom/queue"
	"waitingroom/queue/members"
)

// minTokens is the smallest batch of fresh entry tokens passed to one
// admission run: enough for the usual refill without generating many
// tokens that the run cannot use.
const minTokens = 8

// maxRunsPerTick bounds how many admission runs one room gets in one tick
// when capacity is larger than the tokens passed.
const maxRunsPerTick = 16

// DefaultSweepEvery is how often the admitter looks at every room it runs
// for work it was not woken for (Options.SweepEvery).
const DefaultSweepEvery = 30 * time.Second

// defaultParallel is how many rooms' admission runs one tick has in
// flight at once (Options.Parallel).
const defaultParallel = 16

// Options configure an Admitter.
type Options struct {
	// Interval between ticks (default 100ms).
	Interval time.Duration
	// OnAdmit, when set, is called after every successful admission run,
	// from one of the tick's goroutines (runs of different rooms are
	// concurrent); it must not block.
	OnAdmit func(queue.AdmitResult)
	// OnRelease, when set, is called when this instance stops running a
	// room because another instance runs it now (Members); a room that
	// merely went idle is not released (its last run reported it empty).
	OnRelease func(room string)
	// Rooms are created with Defaults whenever they are missing: at the
	// first tick, and again if Redis lost its data (a restart without
	// persistence), so the configured rooms never stay gone.
	Rooms    []string
	Defaults queue.RoomConfig
	// Stored, when set, returns the room definitions kept outside Redis
	// (the admin API's, in Postgres): they are recreated like Rooms,
	// with their own configuration (which wins over Defaults for a room
	// named in both). Read at each sweep; an error keeps the last read.
	Stored func(ctx context.Context) (map[string]queue.RoomConfig, error)
	// Members shares the rooms among the live instances: this instance
	// runs only the rooms it owns, and beats once a tick. nil: it runs
	// every room (a lone instance, tests).
	Members *members.Members
	// Woken says that every event of every room (but an admission run's
	// own: queue.Event.Wakes) is handed to Wake and every (re)subscription
	// to Resweep (the stream hub's subscription does it): then a room
	// without work costs nothing until woken, the rooms are swept every
	// SweepEvery, and Run runs a woken room at once rather than at the
	// next tick (Wake). Without it every tick sweeps every room (one
	// command per room per tick): right for tests and a handful of rooms,
	// not for thousands.
	Woken bool
	// WakeGap: the least time from the start of a room's run to a run for
	// a wake-up between ticks (see Wake; default a tenth of Interval), so
	// that a room woken again and again — arrivals, each the first in an
	// empty queue, as fast as it admits them — runs at most once per gap,
	// not once per arrival.
	WakeGap time.Duration
	// SweepEvery: how often every room this instance runs is looked at
	// for work it was not woken for, such as after an event lost while
	// the subscription stayed up (default DefaultSweepEvery).
	SweepEvery time.Duration
	// Parallel bounds the rooms whose runs one tick has in flight at once
	// (default 16): a tick is as long as its slowest room, not as the sum.
	Parallel int
	// Gate, when set, bounds the admissions of adaptive rooms per tick by
	// what the downstream takes now (adaptive.PoolGate); rooms in fixed
	// mode pass it by.
	Gate   Gate
	Logger *slog.Logger
}

// Gate bounds the admissions of adaptive rooms by what the downstream
// takes now (adaptive.PoolGate: the database pool's free connections),
// where targetActive bounds how many hold a slot at all. Refill is called
// once at the start of each tick that runs a gated room; Take and Done
// by that tick's runs, several at once, so one tick's budget is shared by
// the adaptive rooms this instance runs.
type Gate interface {
	Refill(now time.Time)
	// Take returns how many of n admissions the tick's budget allows,
	// and takes them from it.
	Take(n int) int
	// Done ends a run that asked for n, was allowed allowed (Take's
	// answer) and admitted used: the unused part goes back.
	Done(n, allowed, used int)
}

// Admitter runs the admission loop of one instance. Cost follows work: a
// room is run only while it has work (someone waiting, pre-queued or
// admitted) and only by the one instance that owns it (Members), every
// tick while anyone waits, at the next entry deadline or the opening
// otherwise, and not at all once empty. A room without work joins the
// runs when woken by an event of its own (the first arrival's, published
// by the enter script) or found busy by a sweep: at the first tick, every
// SweepEvery, when the subscription is re-established (events may have
// been lost) and when the live instances change (this one may own more
// rooms). A woken room that no tick would run next (at rest, or holding
// only admissions or a pre-queue) is run at once, between the ticks, at
// most once per WakeGap: its first arrival does not wait for the next
// tick, however many rooms there are. The admission script stays atomic,
// so two instances running a room at once during a hand-over never admit
// beyond its target.
type Admitter struct {
	q *queue.Queue
	o Options

	mu      sync.Mutex
	running map[string]*roomRun // rooms with work that this instance runs
	woken   map[string]bool     // rooms woken since the last tick
	// soon: the woken rooms that Run runs before the next tick (see Wake),
	// and soonNow wakes Run's run loop for them (capacity 1).
	soon    map[string]bool
	soonNow chan struct{}
	resweep bool // a sweep is due at the next tick
	// sweepNow wakes Run's sweep loop (capacity 1): a sweep was asked for.
	sweepNow chan struct{}
	prepared bool // Prepare was called
	ticked   bool // a tick ran (runDue): from then on Wake runs rooms at once
	sweptAt  time.Time
	stored   map[string]queue.RoomConfig // the last read of Stored
	storedAt time.Time                   // when it was read
	down     bool                        // Redis unreachable: logged once, until it returns
	// storedDown: the last read of Stored failed (logged once).
	storedDown bool
	// refilled: when the Gate was last refilled (by the run loop alone).
	refilled time.Time
}

// roomRun is a room this instance runs.
type roomRun struct {
	want int       // tokens the last run could have used
	next time.Time // when it next needs a run (zero: the next tick)
	// ranAt: when its last run started here (zero: not yet); a wake-up
	// between ticks runs it no sooner than WakeGap after that.
	ranAt time.Time
	// fixed: the last run found the room's mode fixed, so its runs pass
	// the Gate by; a room not run yet is gated (an adaptive room's first
	// run after a wake is a sale's first burst).
	fixed bool
}

// Defaults is the configuration of the rooms the admitter creates when
// missing (Options.Defaults): the admin API creates rooms with it too.
func (a *Admitter) Defaults() queue.RoomConfig { return a.o.Defaults }

// New returns an Admitter of q's rooms.
func New(q *queue.Queue, o Options) *Admitter {
	if o.Interval <= 0 {
		o.Interval = 100 * time.Millisecond
	}
	if o.WakeGap <= 0 {
		o.WakeGap = o.Interval / 10
	}
	if o.SweepEvery <= 0 {
		o.SweepEvery = DefaultSweepEvery
	}
	if o.Parallel <= 0 {
		o.Parallel = defaultParallel
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Admitter{q: q, o: o, running: map[string]*roomRun{}, woken: map[string]bool{}, resweep: true,
		soon: map[string]bool{}, soonNow: make(chan struct{}, 1), sweepNow: make(chan struct{}, 1)}
}

// Wake tells the admitter that room changed (one of its events): if this
// instance runs it, it is run at the next tick. Under Run with wake-ups
// (Options.Woken), once the admitter has ticked, a room that the next
// tick would not run anyway — one at rest, or holding only admissions or
// a pre-queue (its first arrival's event) — is run at once instead, or
// once WakeGap has passed since its last run started: a woken room does
// not wait for the next tick, and a stream of wake-ups runs it at most
// once per WakeGap. Before its first tick (Tick, or Run's an interval
// after its start) an admitter runs no room, woken ones included: they
// wait for that tick. Safe for concurrent use; it never blocks on Redis.
func (a *Admitter) Wake(room string) {
	a.mu.Lock()
	a.woken[room] = true
	soon := false
	if a.o.Woken && a.ticked && !a.soon[room] && a.owns(room) {
		rr := a.running[room]
		soon = rr == nil || !rr.next.IsZero() || rr.ranAt.IsZero()
		if soon {
			a.soon[room] = true
		}
	}
	a.mu.Unlock()
	if soon {
		select {
		case a.soonNow <- struct{}{}:
		default:
		}
	}
}

// Resweep makes the next tick look at every room this instance runs: call
// it when the event subscription was (re)established, as events published
// meanwhile are lost. Safe for concurrent use.
func (a *Admitter) Resweep() {
	a.mu.Lock()
	a.resweep = true
	a.mu.Unlock()
	select {
	case a.sweepNow <- struct{}{}:
	default:
	}
}

// Running returns the rooms this instance runs now (those with work, and
// those woken since the last tick), in name order: the rooms whose history
// and adaptive steps are this instance's to make.
func (a *Admitter) Running() []string {
	a.mu.Lock()
	out := make([]string, 0, len(a.running)+len(a.woken))
	for r := range a.running {
		out = append(out, r)
	}
	for r := range a.woken {
		if a.running[r] == nil && a.owns(r) {
			out = append(out, r)
		}
	}
	a.mu.Unlock()
	slices.Sort(out)
	return out
}

// Run runs the admission until ctx is done, in three loops so that no
// part waits for another: the beats (Members, one every Interval, so an
// instance busy sweeping thousands of rooms is never taken for stopped),
// the sweeps (every SweepEvery and when asked, at most one a second) and
// the runs (every Interval the rooms due, and between the ticks the
// rooms woken at rest, as Wake says). It beats and sweeps once
// before the first run, an interval after the start: the configured rooms
// are created and Running holds the busy rooms from the start. Without
// wake-ups (Woken false) each run is a whole Tick instead. While Redis is
// unreachable the runs back off (up to 2s between tries) and log once when
// it goes and once when it returns. On the way out it leaves the live
// instances (Members), so the others take its rooms over at their next
// beat.
func (a *Admitter) Run(ctx context.Context) {
	a.start(ctx)
	var wg sync.WaitGroup
	if a.o.Woken {
		if a.o.Members != nil {
			wg.Go(func() {
				loop.Every(ctx, a.o.Interval, func(ctx context.Context) { _ = a.beat(ctx) })
			})
		}
		wg.Go(func() { a.sweepLoop(ctx) })
	}
	if a.o.Woken {
		a.runLoop(ctx)
	} else {
		wait := a.o.Interval
		loop.Paced(ctx, wait, func(ctx context.Context) time.Duration {
			wait = a.pace(ctx, a.Tick(ctx), wait)
			return wait
		})
	}
	wg.Wait()
	if m := a.o.Members; m != nil {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = m.Leave(lctx)
	}
}

// pace returns the wait before the next tick after one that ended with
// err, the last wait having been wait: the interval, or while Redis is
// unreachable twice the last wait, up to 2s. It logs once when Redis goes
// and once when it returns.
func (a *Admitter) pace(ctx context.Context, err error, wait time.Duration) time.Duration {
	switch {
	case ctx.Err() != nil:
		return wait // stopping: the loop returns before waiting
	case err != nil:
		if !a.down {
			a.o.Logger.LogAttrs(ctx, slog.LevelError, "admission paused: redis unreachable", slog.String("error", err.Error()))
			a.down = true
		}
		return min(max(wait*2, a.o.Interval), 2*time.Second)
	default:
		if a.down {
			a.o.Logger.LogAttrs(ctx, slog.LevelInfo, "admission resumed")
			a.down = false
		}
		return a.o.Interval
	}
}

// runLoop is Run's run loop with wake-ups: every Interval the rooms due
// (backing off while Redis is unreachable), and between the ticks the
// rooms woken at rest, as soon as Wake asks for them (runSoon). Both kinds
// of runs are made here, one batch at a time, so that this instance never
// runs a room twice at once.
func (a *Admitter) runLoop(ctx context.Context) {
	wait := a.o.Interval
	tick := time.NewTimer(wait)
	defer tick.Stop()
	// later calls runSoon again for the rooms woken within WakeGap of
	// their last run.
	later := time.NewTimer(wait)
	later.Stop()
	defer later.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			wait = a.pace(ctx, a.runs(ctx), wait)
			tick.Reset(wait)
			continue
		case <-a.soonNow:
		case <-later.C:
		}
		if a.down {
			continue // the ticks try again, and run the woken rooms then
		}
		if d := a.runSoon(ctx, time.Now()); d > 0 {
			later.Reset(d)
		}
	}
}

// minSweepGap is the least time between two sweeps of Run's sweep loop,
// however often one is asked for (live instances that keep changing, a
// subscription that keeps coming back): at 100,000 rooms a sweep is
// 50,000 commands per instance.
const minSweepGap = time.Second

// sweepLoop sweeps every SweepEvery and whenever a sweep is asked for
// (Resweep), at most one every minSweepGap, until ctx is done. A failed
// sweep asks for itself again (sweep's Resweep) and is tried after the gap.
func (a *Admitter) sweepLoop(ctx context.Context) {
	loop.EveryOrWake(ctx, a.o.SweepEvery, a.sweepNow, func(ctx context.Context, ticked bool) {
		a.mu.Lock()
		due := ticked || a.resweep
		since := time.Since(a.sweptAt)
		a.mu.Unlock()
		if !due {
			return
		}
		if since < minSweepGap {
			t := time.NewTimer(minSweepGap - since)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
		_ = a.sweep(ctx, time.Now())
	})
}

// beat beats (Members): a change of the live instances asks for a sweep,
// as this instance may own rooms it did not.
func (a *Admitter) beat(ctx context.Context) error {
	m := a.o.Members
	if m == nil {
		return nil
	}
	changed, err := m.Beat(ctx)
	if err != nil {
		return fmt.Errorf("admission: beat: %w: %w", queue.ErrUnavailable, err)
	}
	if changed {
		a.Resweep()
	}
	return nil
}

// runs is one step of Run's run loop: the rooms due are run; a room set
// gone from Redis asks for a sweep at once.
func (a *Admitter) runs(ctx context.Context) error {
	if err := a.checkRoomSet(ctx); err != nil {
		return err
	}
	return a.runDue(ctx, time.Now())
}

// checkRoomSet asks for a sweep when the room set is gone from Redis while
// some room must exist: a Redis that lost its data lost the set with it,
// and the configured and stored rooms must come back now, not at the next
// sweep (their enters answer 404 meanwhile).
func (a *Admitter) checkRoomSet(ctx context.Context) error {
	if !a.expectsRooms() {
		return nil
	}
	found, err := a.q.HasRooms(ctx)
	if err != nil {
		return err
	}
	if !found {
		a.Resweep()
	}
	return nil
}

// Prepare beats and sweeps once, without admitting: the configured and
// stored rooms are created and the rooms with work found, so that an
// instance serves with its rooms there (Main calls it before serving). Run
// calls it first unless it was called. A failure (Redis unreachable) is
// left to the loops, which beat and sweep again.
func (a *Admitter) Prepare(ctx context.Context) {
	a.mu.Lock()
	a.prepared = true
	a.mu.Unlock()
	if m := a.o.Members; m != nil {
		if _, err := m.Beat(ctx); err != nil {
			a.Resweep()
			return
		}
	}
	_ = a.sweep(ctx, time.Now())
}

// start is Run's Prepare, unless Prepare was called already.
func (a *Admitter) start(ctx context.Context) {
	a.mu.Lock()
	done := a.prepared
	a.mu.Unlock()
	if !done {
		a.Prepare(ctx)
	}
}

// owns reports whether this instance runs room.
func (a *Admitter) owns(room string) bool {
	return a.o.Members == nil || a.o.Members.Owns(room)
}

// Tick is one whole step, done at once on the caller's goroutine: it
// beats (Members), sweeps when a sweep is due (asked for, SweepEvery
// passed, the room set gone, or on every tick without wake-ups), and runs
// every room that needs a run now, several at once. Run does the same in
// three loops. It is not safe for concurrent use on one Admitter. It
// returns the first error that means Redis is unreachable; other rooms
// are still tried.
func (a *Admitter) Tick(ctx context.Context) error {
	if err := a.beat(ctx); err != nil {
		return err
	}
	if err := a.checkRoomSet(ctx); err != nil {
		return err
	}
	now := time.Now()
	a.mu.Lock()
	sweep := a.resweep || !a.o.Woken || now.Sub(a.sweptAt) >= a.o.SweepEvery
	a.mu.Unlock()
	if sweep {
		if err := a.sweep(ctx, now); err != nil {
			return err
		}
	}
	return a.runDue(ctx, now)
}

// expectsRooms reports whether some room must exist: configured or stored.
func (a *Admitter) expectsRooms() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.o.Rooms) > 0 || len(a.stored) > 0
}

// sweep creates the configured and stored rooms that are missing, and
// adds every room this instance owns that has work to its runs; rooms it
// no longer owns leave them (OnRelease).
func (a *Admitter) sweep(ctx context.Context, now time.Time) error {
	a.mu.Lock()
	// The definitions are read on the sweeps that find what may have
	// changed: not on every tick of an admitter without wake-ups.
	readStored := a.resweep || now.Sub(a.storedAt) >= a.o.SweepEvery
	a.resweep = false
	a.mu.Unlock()
	names, err := a.q.Rooms(ctx)
	if err != nil {
		a.Resweep()
		return err
	}
	created, err := a.createMissing(ctx, names, readStored, now)
	if err != nil {
		a.Resweep()
		return err
	}
	names = append(names, created...)
	owned := make([]string, 0, len(names))
	for _, r := range names {
		if a.owns(r) {
			owned = append(owned, r)
		}
	}
	busy, err := a.q.Busy(ctx, owned)
	if err != nil {
		a.Resweep()
		return err
	}
	var released []string
	a.mu.Lock()
	for i, r := range owned {
		if busy[i] && a.running[r] == nil {
			a.running[r] = &roomRun{}
		}
	}
	for r := range a.running {
		if !a.owns(r) {
			delete(a.running, r)
			released = append(released, r)
		}
	}
	a.sweptAt = now
	a.mu.Unlock()
	a.release(released)
	return nil
}

// createMissing creates the configured and stored rooms absent from names
// (the room set as read, sorted) that this instance owns, and returns them;
// readStored: read the stored definitions again first. A room is created
// from a read of the definitions made after the room set was read, never
// from an older one: a room deleted through the admin API (its definition
// removed first, then its keys) is not brought back by a stale copy.
func (a *Admitter) createMissing(ctx context.Context, names []string, readStored bool, now time.Time) ([]string, error) {
	missing := func(defs map[string]queue.RoomConfig) []string {
		var out []string
		for r := range defs {
			if _, found := slices.BinarySearch(names, r); !found && a.owns(r) {
				out = append(out, r)
			}
		}
		return out
	}
	defs := a.definitions(ctx, readStored, now)
	gone := missing(defs)
	if len(gone) > 0 && !readStored && a.o.Stored != nil {
		defs = a.definitions(ctx, true, now)
		gone = missing(defs)
	}
	var created []string
	for _, r := range gone {
		if err := a.create(ctx, r, defs[r]); err != nil {
			return created, err
		}
		created = append(created, r)
	}
	return created, nil
}

// definitions returns every room that must exist with the configuration it
// is created with: the configured ones with Defaults, the stored ones with
// their own (read again first when readStored; a failed read keeps the
// last one, logged once).
func (a *Admitter) definitions(ctx context.Context, readStored bool, now time.Time) map[string]queue.RoomConfig {
	var stored map[string]queue.RoomConfig
	var err error
	readStored = readStored && a.o.Stored != nil
	if readStored {
		stored, err = a.o.Stored(ctx)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case !readStored:
	case err != nil:
		a.storedAt = now // tried again at the next sweep that reads them
		if !a.storedDown {
			a.o.Logger.LogAttrs(ctx, slog.LevelWarn, "room definitions unreadable: keeping the last ones read", slog.String("error", err.Error()))
			a.storedDown = true
		}
	default:
		if a.storedDown {
			a.o.Logger.LogAttrs(ctx, slog.LevelInfo, "room definitions readable again")
			a.storedDown = false
		}
		a.stored, a.storedAt = stored, now
	}
	want := make(map[string]queue.RoomConfig, len(a.o.Rooms)+len(a.stored))
	for _, r := range a.o.Rooms {
		want[r] = a.o.Defaults
	}
	for r, cfg := range a.stored {
		want[r] = cfg
	}
	return want
}

// create creates room with cfg, logging it.
func (a *Admitter) create(ctx context.Context, room string, cfg queue.RoomConfig) error {
	a.o.Logger.LogAttrs(ctx, slog.LevelInfo, "creating configured room", slog.String("room", room))
	return a.q.EnsureRoom(ctx, room, cfg)
}

// configured returns the configuration a configured room (Options.Rooms) is
// created with when missing — its stored definition when it has one, else
// Defaults — and whether room is configured.
func (a *Admitter) configured(room string) (queue.RoomConfig, bool) {
	if !slices.Contains(a.o.Rooms, room) {
		return queue.RoomConfig{}, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if cfg, ok := a.stored[room]; ok {
		return cfg, true
	}
	return a.o.Defaults, true
}

func (a *Admitter) release(rooms []string) {
	if a.o.OnRelease == nil {
		return
	}
	for _, r := range rooms {
		a.o.OnRelease(r)
	}
}

// job is one room's run: the tokens its last run could have used, and
// whether it passes the Gate.
type job struct {
	room  string
	want  int
	gated bool
}

// take returns room's run as a job, recording that it starts at now
// (under a.mu).
func (a *Admitter) take(room string, rr *roomRun, now time.Time) job {
	rr.ranAt = now
	return job{room, rr.want, a.o.Gate != nil && !rr.fixed}
}

// runSoon runs the rooms woken at rest (Wake) whose last run here started
// at least WakeGap ago, at most Parallel at once, and returns how long
// until the next of the others may run (0: none left). A room that the
// next tick runs anyway after a run here (someone waits: its own runs
// publish, and so do departures) or that another instance owns now is
// left to the ticks; one a sweep found busy, not run here yet, is not.
func (a *Admitter) runSoon(ctx context.Context, now time.Time) time.Duration {
	var jobs []job
	var after time.Duration
	a.mu.Lock()
	for r := range a.soon {
		rr := a.running[r]
		if !a.owns(r) || (rr != nil && rr.next.IsZero() && !rr.ranAt.IsZero()) {
			delete(a.soon, r)
			continue
		}
		if rr != nil {
			if d := rr.ranAt.Add(a.o.WakeGap).Sub(now); d > 0 {
				if after == 0 || d < after {
					after = d
				}
				continue
			}
		}
		// The run covers the wake-up: a later one wakes it again.
		delete(a.soon, r)
		delete(a.woken, r)
		if rr == nil {
			rr = &roomRun{}
			a.running[r] = rr
		}
		jobs = append(jobs, a.take(r, rr, now))
	}
	a.mu.Unlock()
	_ = a.runJobs(ctx, now, jobs, false) // a failed run is due at the next tick, which reports it
	return after
}

// runDue runs every room that needs a run at now, at most Parallel at
// once, and schedules each one's next run from what its run found.
func (a *Admitter) runDue(ctx context.Context, now time.Time) error {
	var jobs []job
	var released []string
	a.mu.Lock()
	a.ticked = true
	for r := range a.woken {
		if a.owns(r) && a.running[r] == nil {
			a.running[r] = &roomRun{}
		} else if rr := a.running[r]; rr != nil {
			rr.next = time.Time{}
		}
		delete(a.soon, r) // this tick runs it
	}
	clear(a.woken)
	for r, rr := range a.running {
		switch {
		case !a.owns(r):
			delete(a.running, r)
			released = append(released, r)
		case !rr.next.After(now):
			jobs = append(jobs, a.take(r, rr, now))
		}
	}
	a.mu.Unlock()
	a.release(released)
	return a.runJobs(ctx, now, jobs, true)
}

// runJobs runs jobs, at most Parallel at once, and schedules each room's
// next run from what its run found. The Gate is refilled for a tick
// (tick), and for runs between ticks only once an interval has passed
// since its last refill: its budget is one interval's.
func (a *Admitter) runJobs(ctx context.Context, now time.Time, jobs []job, tick bool) error {
	if len(jobs) == 0 {
		return nil
	}
	if slices.ContainsFunc(jobs, func(j job) bool { return j.gated }) && (tick || now.Sub(a.refilled) >= a.o.Interval) {
		a.o.Gate.Refill(now)
		a.refilled = now
	}
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, a.o.Parallel)
	for i, j := range jobs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			res, err := a.admitRoom(ctx, j.room, j.want, j.gated)
			errs[i] = err
			a.schedule(j.room, res, err)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, queue.ErrRoomNotFound) {
			return err
		}
	}
	return nil
}

// schedule records when room next needs a run after a run that found res
// (or failed with err): every tick while anyone waits or an opening is
// due, at the earlier of the opening and the next entry deadline while
// only those remain, never once it is empty or gone.
func (a *Admitter) schedule(room string, res queue.AdmitResult, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	rr := a.running[room]
	if rr == nil {
		return
	}
	switch {
	case errors.Is(err, queue.ErrRoomNotFound):
		delete(a.running, room)
	case err != nil:
		rr.next = time.Time{} // Redis unreachable: try again next tick
	case !res.Busy():
		delete(a.running, room)
	default:
		rr.want = res.Want
		rr.next = nextRun(res)
		rr.fixed = !res.Adaptive
	}
}

// giveBack returns the allowed admissions taken from the Gate for a run
// that did not happen.
func (a *Admitter) giveBack(gated bool, asked, allowed int) {
	if gated {
		a.o.Gate.Done(asked, allowed, 0)
	}
}

// nextRun is when a room that still has work after run res needs the next
// (zero: the next tick). Times are Redis's clock, compared with this
// instance's: a clock behind Redis's runs a little late, one ahead a little
// early, and either way the run after puts it right.
func nextRun(res queue.AdmitResult) time.Time {
	pending := res.PreQueue > 0 || res.Merge == queue.MergeArmed
	if res.Waiting > 0 || (pending && res.OpensAt.IsZero()) || res.Due || res.Merge == queue.MergeMoving {
		return time.Time{}
	}
	next := res.NextDeadline
	if pending && (next.IsZero() || res.OpensAt.Before(next)) {
		next = res.OpensAt
	}
	return next
}

// open runs the opening of room: its pre-queue's (Open), or its sharded
// pre-queue's merge (Merge) when sharded.
func (a *Admitter) open(ctx context.Context, room string, sharded bool) error {
	open := a.q.Open
	if sharded {
		open = a.q.Merge
	}
	res, err := open(ctx, room, queue.NewShuffleSeed())
	if err != nil {
		return err
	}
	if res.Moved > 0 {
		attrs := []slog.Attr{slog.String("room", room), slog.Int("moved", res.Moved), slog.Int64("waiting", res.Waiting)}
		if res.Seed != "" {
			attrs = append(attrs, slog.String("shuffleSeed", res.Seed), slog.Int("shuffled", res.Shuffled))
		}
		a.o.Logger.LogAttrs(ctx, slog.LevelInfo, "room opened: pre-queue moved into the queue", attrs...)
	}
	return nil
}

// admitRoom runs room's admission until it has used its capacity (at most
// maxRunsPerTick runs), opening it first when its opening is due, and
// returns the last run's result. A configured room found missing is
// created again and run; a stored one is left to the next sweep. A gated
// room's runs pass at most the tokens the Gate allows (a run with none
// still prunes and measures), and the tick's runs end once it allowed
// fewer than asked for.
func (a *Admitter) admitRoom(ctx context.Context, room string, want int, gated bool) (queue.AdmitResult, error) {
	n := max(want, minTokens)
	var res queue.AdmitResult
	merged := false // a sharded opening's merge ran in this tick
	for range maxRunsPerTick {
		var err error
		asked := n
		if gated {
			n = a.o.Gate.Take(n)
		}
		res, err = a.q.Admit(ctx, room, n)
		if errors.Is(err, queue.ErrRoomNotFound) {
			// A configured room comes back at once (it cannot be
			// deleted); any other may have been deleted on purpose, so
			// the next sweep decides from a fresh read of the stored
			// definitions.
			cfg, ok := a.configured(room)
			if !ok {
				a.Resweep()
				a.giveBack(gated, asked, n)
				return res, err
			}
			if err := a.create(ctx, room, cfg); err != nil {
				a.giveBack(gated, asked, n)
				return res, err
			}
			res, err = a.q.Admit(ctx, room, n)
		}
		spent := gated && n < asked && res.Adaptive // the gate allowed fewer than asked
		if gated {
			a.o.Gate.Done(asked, n, len(res.Admitted))
			gated = res.Adaptive // a fixed room passes the gate by
		}
		if err != nil {
			return res, err
		}
		if a.o.OnAdmit != nil {
			a.o.OnAdmit(res)
		}
		if res.Due || (res.Merge == queue.MergeMoving && !merged) {
			// The opening time has come: turn the pre-queue into the
			// queue (one idempotent script; another instance may have
			// done it already), then admit in the same tick. A sharded
			// opening merges by slices while admission runs: one Merge
			// call per tick.
			merged = merged || res.Merge > 0
			if err := a.open(ctx, room, res.Merge > 0); err != nil {
				return res, err
			}
			if res.Due {
				continue
			}
		}
		// More capacity than tokens passed: run again at once.
		if spent || len(res.Admitted) < n || res.Want <= n {
			return res, nil
		}
		n = res.Want - n
	}
	return res, nil
}
