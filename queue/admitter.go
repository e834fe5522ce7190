package queue

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"waitingroom/queue/loop"
)

// minTokens is the smallest batch of fresh entry tokens passed to one
// admission run: enough for the usual refill without generating many
// tokens that the run cannot use.
const minTokens = 8

// maxRunsPerTick bounds how many admission runs one room gets in one tick
// when capacity is larger than the tokens passed.
const maxRunsPerTick = 16

// AdmitterOptions configure an Admitter.
type AdmitterOptions struct {
	// Interval between ticks (WR_ADMIT_INTERVAL, default 100ms).
	Interval time.Duration
	// OnAdmit, when set, is called after every successful admission run,
	// from the admitter's goroutine; it must not block.
	OnAdmit func(AdmitResult)
	// Rooms are created with Defaults whenever they are missing: at the
	// first tick, and again if Redis lost its data (a restart without
	// persistence), so the configured rooms never stay gone.
	Rooms    []string
	Defaults RoomConfig
	Logger   *slog.Logger
}

// Admitter runs the admission loop of one instance: every Interval, one
// admission run per room. Every instance runs one; the admission script is
// atomic, so they never admit beyond a room's target together.
type Admitter struct {
	q    *Queue
	o    AdmitterOptions
	want map[string]int // per room: tokens the last run could have used
	down bool           // Redis unreachable: logged once, until it returns
}

// Defaults is the configuration of the rooms the admitter creates when
// missing (WR_TARGET_ACTIVE, WR_ENTRY_TTL): the admin API creates rooms
// with it too.
func (a *Admitter) Defaults() RoomConfig { return a.o.Defaults }

// NewAdmitter returns an Admitter for q.
func (q *Queue) NewAdmitter(o AdmitterOptions) *Admitter {
	if o.Interval <= 0 {
		o.Interval = 100 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Admitter{q: q, o: o, want: map[string]int{}}
}

// Run ticks until ctx is done. While Redis is unreachable it backs off (up
// to 2s between tries) and logs once when it goes and once when it returns.
func (a *Admitter) Run(ctx context.Context) {
	wait := a.o.Interval
	loop.Paced(ctx, wait, func(ctx context.Context) time.Duration {
		err := a.Tick(ctx)
		switch {
		case ctx.Err() != nil:
			return wait // stopping: Paced returns before waiting
		case err != nil:
			if !a.down {
				a.o.Logger.LogAttrs(ctx, slog.LevelError, "admission paused: redis unreachable", slog.String("error", err.Error()))
				a.down = true
			}
			wait = min(max(wait*2, a.o.Interval), 2*time.Second)
		default:
			if a.down {
				a.o.Logger.LogAttrs(ctx, slog.LevelInfo, "admission resumed")
				a.down = false
			}
			wait = a.o.Interval
		}
		return wait
	})
}

// Tick runs one admission step for every room. It is not safe for
// concurrent use on one Admitter (run one Admitter per goroutine). It returns the first error
// that means Redis is unreachable; other rooms are still tried.
func (a *Admitter) Tick(ctx context.Context) error {
	rooms, err := a.q.Rooms(ctx)
	if err != nil {
		return err
	}
	for _, r := range a.o.Rooms {
		if !slices.Contains(rooms, r) {
			rooms = append(rooms, r)
		}
	}
	var first error
	for _, room := range rooms {
		if err := a.admitRoom(ctx, room); err != nil && first == nil && !errors.Is(err, ErrRoomNotFound) {
			first = err
		}
	}
	return first
}

func (a *Admitter) open(ctx context.Context, room string) error {
	res, err := a.q.Open(ctx, room, NewShuffleSeed())
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

func (a *Admitter) admitRoom(ctx context.Context, room string) error {
	n := max(a.want[room], minTokens)
	for range maxRunsPerTick {
		res, err := a.q.Admit(ctx, room, n)
		if errors.Is(err, ErrRoomNotFound) && slices.Contains(a.o.Rooms, room) {
			a.o.Logger.LogAttrs(ctx, slog.LevelInfo, "creating configured room", slog.String("room", room))
			if err := a.q.EnsureRoom(ctx, room, a.o.Defaults); err != nil {
				return err
			}
			res, err = a.q.Admit(ctx, room, n)
		}
		if err != nil {
			return err
		}
		a.want[room] = res.Want
		if a.o.OnAdmit != nil {
			a.o.OnAdmit(res)
		}
		if res.Due {
			// The opening time has come: turn the pre-queue into the
			// queue (one idempotent script; another instance may have
			// done it already), then admit in the same tick.
			if err := a.open(ctx, room); err != nil {
				return err
			}
			continue
		}
		// More capacity than tokens passed: run again at once.
		if len(res.Admitted) < n || res.Want <= n {
			return nil
		}
		n = res.Want - n
	}
	return nil
}
