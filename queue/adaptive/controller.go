package adaptive

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/internal/loop"
	"waitingroom/queue"
)

//go:embed scripts/adapt.lua
var adaptSource string

var adaptScript = redis.NewScript(adaptSource)

// Rooms is what the controller needs of the queue (*queue.Queue has it):
// the rooms, a room's configuration and active count, and the keys under a
// room's hash tag.
type Rooms interface {
	Rooms(ctx context.Context) ([]string, error)
	Room(ctx context.Context, room string) (queue.RoomInfo, error)
	RoomKey(room, name string) string
}

// Options configure a Controller.
type Options struct {
	// Window is the length of one signals window.
	Window time.Duration
	// Rule holds the default bounds (a room's own minActive/maxActive win),
	// the sample floor and the p90 ceiling.
	Rule Rule
	// Owner names this instance in the lease (for debugging).
	Owner string
	// OnStep, when set, is called after every step (leader or not) with
	// the room's stored state and current limit; it must not block.
	OnStep func(room string, st State, limit int64)
	// OnChange, when set, is called when this instance changed a room's
	// limit; it must not block.
	OnChange func(room string, st Step)
	// Running, when set, returns the rooms Run steps: those this instance
	// runs (admission.Admitter.Running), with work and owned by it, so a room
	// is stepped by one instance and an idle one by none. Without it Run
	// steps every room.
	Running func() []string
	Logger  *slog.Logger
}

// Controller runs the adaptive limit controller of one instance. Every
// instance runs one; the per-window lease lets one of them act per room
// and window.
type Controller struct {
	rdb   redis.UniversalClient
	rooms Rooms
	o     Options
}

// NewController returns a Controller reading and writing with rdb under
// the keys of rooms.
func NewController(rdb redis.UniversalClient, rooms Rooms, o Options) *Controller {
	if o.Window <= 0 {
		o.Window = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Controller{rdb: rdb, rooms: rooms, o: o}
}

// Rule is the controller's default bounds, sample floor and p90 ceiling
// (Options.Rule): the admin API checks a room's own bounds against it.
func (c *Controller) Rule() Rule { return c.o.Rule }

// Window is the length of one signals window (Options.Window).
func (c *Controller) Window() time.Duration { return c.o.Window }

// State reads what the controller last stored for room. Errors:
// queue.ErrRoomNotFound (an invalid name), queue.ErrUnavailable.
func (c *Controller) State(ctx context.Context, room string) (State, error) {
	return readState(ctx, c.rdb, c.rooms, room)
}

// Step is the outcome of one controller step for one room.
type Step struct {
	Leader  bool // this instance held the lease for the window
	Window  int64
	Signals Signals
	Limit   int64 // targetActive before the step
	Next    int64 // what the rule asked for (adaptive rooms)
	Reason  string
	Changed bool // targetActive was changed to Next
}

// String is for logs.
func (s Step) String() string {
	return fmt.Sprintf("window %d leader %v limit %d→%d (%s)", s.Window, s.Leader, s.Limit, s.Next, s.Reason)
}

// Step runs the controller for room on the window that ended before now.
// Only the caller that takes the window's lease acts; the others get
// Leader false. Errors: queue.ErrRoomNotFound, queue.ErrUnavailable.
func (c *Controller) Step(ctx context.Context, room string, now time.Time) (Step, error) {
	if !queue.ValidRoom(room) {
		return Step{}, queue.ErrRoomNotFound
	}
	k := keysOf(c.rooms, room)
	w := windowOf(now, c.o.Window) - 1
	st := Step{Window: w}
	ok, err := c.rdb.SetNX(ctx, k.lease(w), c.o.Owner, 2*c.o.Window).Result()
	if err != nil {
		return st, unavailable("adaptive lease", err)
	}
	if !ok {
		return st, nil
	}
	st.Leader = true
	info, err := c.rooms.Room(ctx, room)
	if err != nil {
		return st, err
	}
	var sig, prev *redis.MapStringStringCmd
	_, err = c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		sig = p.HGetAll(ctx, k.signals(w))
		prev = p.HGetAll(ctx, k.adaptive)
		return nil
	})
	if err != nil {
		return st, unavailable("adaptive read", err)
	}
	var ceil Ceiling
	st.Signals, st.Next, st.Reason, ceil = c.decide(info, windowSignals(sig.Val(), c.o.Window), decodeState(prev.Val()), now)
	st.Limit = info.Target
	to := ""
	if st.Next != st.Limit {
		to = strconv.FormatInt(st.Next, 10)
	}
	args := append([]any{st.Limit, to, st.Reason, now.UnixMilli()}, stateFields(st.Signals, ceil, c.o.Window, now)...)
	n, err := adaptScript.Run(ctx, c.rdb, []string{k.cfg, k.adaptive}, args...).Int64()
	if err != nil {
		return st, unavailable("adapt", err)
	}
	st.Changed = n == 1
	return st, nil
}

// decide applies the rule to a room (an adaptive one moves; a fixed one
// holds with no reason), tempered by Guard, and folds the window into the
// baseline: the window's signals with the new baseline, the next limit,
// the reason and the growth ceiling to keep.
func (c *Controller) decide(info queue.RoomInfo, s Signals, old State, now time.Time) (Signals, int64, string, Ceiling) {
	rule := c.o.Rule
	// The gradient compares with the baseline before this window joins it.
	s.Baseline = old.Signals.Baseline
	next, reason, ceil := info.Target, "", Ceiling{}
	if info.Mode == queue.ModeAdaptive {
		rule = rule.WithBounds(info.MinActive, info.MaxActive)
		next, reason = NextLimit(info.Target, info.Active, s, rule)
		next, reason, ceil = Guard(info.Target, next, reason, s, old, now)
	}
	// A stressed window does not raise the baseline: the baseline is what
	// the downstream does when healthy.
	s.Baseline = NextBaseline(old.Signals.Baseline, s.P90, s.Orders >= max(rule.MinSamples, 1) && !stressed(reason))
	return s, next, reason, ceil
}

// Run steps every room (Options.Running: those this instance runs) half a
// window after each window ends, until ctx is done.
func (c *Controller) Run(ctx context.Context) {
	loop.Paced(ctx, c.untilNextStep(time.Now()), func(ctx context.Context) time.Duration {
		c.stepAll(ctx, time.Now())
		return c.untilNextStep(time.Now())
	})
}

// untilNextStep is the wait from now until half a window after the current
// window ends.
func (c *Controller) untilNextStep(now time.Time) time.Duration {
	win := c.o.Window
	next := now.Truncate(win).Add(win / 2)
	if !next.After(now) {
		next = next.Add(win)
	}
	return next.Sub(now)
}

// stepAll runs Step for every room, logs each change and reports each
// step to OnChange and OnStep.
func (c *Controller) stepAll(ctx context.Context, now time.Time) {
	var rooms []string
	if c.o.Running != nil {
		rooms = c.o.Running()
	} else {
		var err error
		if rooms, err = c.rooms.Rooms(ctx); err != nil {
			return // the admission loop logs Redis outages
		}
	}
	for _, room := range rooms {
		st, err := c.Step(ctx, room, now)
		if err != nil && ctx.Err() != nil {
			return // shutting down
		}
		if err != nil {
			if !errors.Is(err, queue.ErrRoomNotFound) && !errors.Is(err, queue.ErrUnavailable) {
				c.o.Logger.LogAttrs(ctx, slog.LevelWarn, "adaptive step failed", slog.String("room", room), slog.String("error", err.Error()))
			}
			continue
		}
		if st.Changed {
			c.changed(ctx, room, st)
		}
		if c.o.OnStep != nil {
			c.observe(ctx, room, st)
		}
	}
}

// changed logs a change this instance made and reports it to OnChange.
func (c *Controller) changed(ctx context.Context, room string, st Step) {
	s := st.Signals
	c.o.Logger.LogAttrs(ctx, slog.LevelInfo, "admission limit changed",
		slog.String("room", room), slog.Int64("from", st.Limit), slog.Int64("to", st.Next),
		slog.String("reason", st.Reason), slog.Int64("window", st.Window),
		slog.Int64("orders", s.Orders), slog.Float64("errorRate", s.ErrorRate()),
		slog.Duration("p90", s.P90), slog.Duration("baselineP90", s.Baseline),
		slog.Duration("poolWait", s.PoolWait), slog.Duration("hold", s.Hold), slog.Float64("utilization", round2(s.Utilization)),
		slog.Float64("poolQueue", round2(s.Queue)), slog.Float64("meanActive", round2(s.Active)),
		slog.Float64("bound", round2(s.Bound)))
	if c.o.OnChange != nil {
		c.o.OnChange(room, st)
	}
}

// observe reports the room's stored state and current limit to OnStep.
func (c *Controller) observe(ctx context.Context, room string, st Step) {
	state, err := c.State(ctx, room)
	if err != nil {
		return
	}
	limit := st.Limit
	if st.Changed {
		limit = st.Next
	} else if info, err := c.rooms.Room(ctx, room); err == nil {
		limit = info.Target
	}
	c.o.OnStep(room, state, limit)
}

// round2 rounds x to two decimals, for logs.
func round2(x float64) float64 { return math.Round(x*100) / 100 }
