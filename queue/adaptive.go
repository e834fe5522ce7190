package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue/loop"
)

// Adaptive admission. Every instance records its orders in memory (Recorder)
// and flushes them about once a second into per-room, per-window hashes
// ("<prefix>{room}:sig:<window>": order count, error count, pool wait and a
// latency histogram with fixed buckets), one HINCRBY pipeline per flush, so
// the order path never waits on Redis for it. Windows are numbered by
// Unix time ÷ window on the instances' clocks; a skew of a few milliseconds
// moves a few samples into a neighbouring window, nothing more.
//
// Half a window after each window ends, every instance's Controller tries
// to take the room's lease for that window (SET NX PX on
// "<prefix>{room}:lease:<window>"); the one that gets it reads the window,
// folds its p90 into the baseline, stores the signals in
// "<prefix>{room}:adaptive" and, when the room is adaptive, writes the new
// targetActive (adapt.lua; the admission script reads it every tick).
// Signals are kept for fixed rooms too, so switching a room to adaptive
// starts from a warm baseline.

// windowOf numbers the window that t falls in.
func windowOf(t time.Time, window time.Duration) int64 {
	return t.UnixMilli() / window.Milliseconds()
}

// orderAcc is one room's orders of one window not yet flushed.
type orderAcc struct {
	orders, errors, acquires, waitUs int64
	buckets                          [20]int64 // len(latencyBuckets)+1
}

type accKey struct {
	room   string
	window int64
}

// Recorder gathers an instance's order signals in memory and flushes them
// to Redis. It is safe for concurrent use.
type Recorder struct {
	q      *Queue
	window time.Duration
	mu     sync.Mutex
	acc    map[accKey]*orderAcc
}

// NewRecorder returns a Recorder for windows of the given length.
func (q *Queue) NewRecorder(window time.Duration) *Recorder {
	return &Recorder{q: q, window: window, acc: map[accKey]*orderAcc{}}
}

// Order records one finished order of room: its latency and whether it
// failed for an infrastructure reason (a business refusal such as out of
// stock is a healthy answer).
func (r *Recorder) Order(room string, latency time.Duration, failed bool, now time.Time) {
	k := accKey{room, windowOf(now, r.window)}
	r.mu.Lock()
	a := r.acc[k]
	if a == nil {
		a = &orderAcc{}
		r.acc[k] = a
	}
	a.orders++
	if failed {
		a.errors++
	}
	a.buckets[bucketOf(latency)]++
	r.mu.Unlock()
}

// PoolWait records database pool acquires and their total wait since the
// last call. The pool is shared by the instance's rooms: the figures count
// for every room with orders in the current window.
func (r *Recorder) PoolWait(acquires int64, wait time.Duration, now time.Time) {
	if acquires <= 0 {
		return
	}
	w := windowOf(now, r.window)
	r.mu.Lock()
	for k, a := range r.acc {
		if k.window == w {
			a.acquires += acquires
			a.waitUs += wait.Microseconds()
		}
	}
	r.mu.Unlock()
}

// Flush writes the gathered signals to Redis in one pipeline and forgets
// them. On failure they are dropped: a lost second of signals only makes a
// window look thinner.
func (r *Recorder) Flush(ctx context.Context) error {
	r.mu.Lock()
	acc := r.acc
	r.acc = map[accKey]*orderAcc{}
	r.mu.Unlock()
	if len(acc) == 0 {
		return nil
	}
	ttl := 10 * r.window
	_, err := r.q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k, a := range acc {
			key := r.q.keys(k.room).signalsKey(k.window)
			p.HIncrBy(ctx, key, "orders", a.orders)
			if a.errors > 0 {
				p.HIncrBy(ctx, key, "errors", a.errors)
			}
			if a.acquires > 0 {
				p.HIncrBy(ctx, key, "acquires", a.acquires)
				p.HIncrBy(ctx, key, "wait_us", a.waitUs)
			}
			for i, c := range a.buckets {
				if c > 0 {
					p.HIncrBy(ctx, key, "b"+strconv.Itoa(i), c)
				}
			}
			p.PExpire(ctx, key, ttl)
		}
		return nil
	})
	if err != nil {
		return unavailable("record signals", err)
	}
	return nil
}

// LimitChange is one change of an adaptive room's limit.
type LimitChange struct {
	At       time.Time
	From, To int64
	Reason   string
}

// AdaptiveState is what the controller last stored for a room.
type AdaptiveState struct {
	Signals Signals
	// At is when the signals were computed (zero: never).
	At         time.Time
	LastChange *LimitChange
}

// Fresh reports whether the state is recent: computed within the last
// three windows from a window some instance reported.
func (s AdaptiveState) Fresh(now time.Time) bool {
	return !s.At.IsZero() && !s.Signals.Stale && s.Signals.Window > 0 && now.Sub(s.At) <= 3*s.Signals.Window
}

// AdaptiveState reads room's controller state.
func (q *Queue) AdaptiveState(ctx context.Context, room string) (AdaptiveState, error) {
	if !ValidRoom(room) {
		return AdaptiveState{}, ErrRoomNotFound
	}
	m, err := q.rdb.HGetAll(ctx, q.keys(room).adaptive).Result()
	if err != nil {
		return AdaptiveState{}, unavailable("adaptive state", err)
	}
	return decodeAdaptive(m), nil
}

func decodeAdaptive(m map[string]string) AdaptiveState {
	num := func(f string) int64 { n, _ := strconv.ParseInt(m[f], 10, 64); return n }
	us := func(f string) time.Duration { return time.Duration(num(f)) * time.Microsecond }
	var st AdaptiveState
	if at := num("at"); at > 0 {
		st.At = msTime(at)
	}
	st.Signals = Signals{
		Window: time.Duration(num("win_ms")) * time.Millisecond,
		Orders: num("orders"), Errors: num("errors"),
		P90: us("p90_us"), Baseline: us("base_us"), PoolWait: us("wait_us"),
		Stale: m["stale"] == "1",
	}
	if lc := num("lc_at"); lc > 0 {
		st.LastChange = &LimitChange{At: msTime(lc), From: num("lc_from"), To: num("lc_to"), Reason: m["lc_reason"]}
	}
	return st
}

// ControllerOptions configure a Controller.
type ControllerOptions struct {
	// Window is the length of one signals window (WR_ADAPTIVE_WINDOW).
	Window time.Duration
	// Rule holds the default bounds (a room's own minActive/maxActive win),
	// the sample floor and the p90 ceiling.
	Rule LimitRule
	// Owner names this instance in the lease (for debugging).
	Owner string
	// OnStep, when set, is called after every step (leader or not) with
	// the room's stored state and current limit; it must not block.
	OnStep func(room string, st AdaptiveState, limit int64)
	// OnChange, when set, is called when this instance changed a room's
	// limit; it must not block.
	OnChange func(room string, st Step)
	Logger   *slog.Logger
}

// Controller runs the adaptive limit controller of one instance. Every
// instance runs one; the per-window lease lets one of them act per room
// and window.
type Controller struct {
	q *Queue
	o ControllerOptions
}

// NewController returns a Controller for q.
func (q *Queue) NewController(o ControllerOptions) *Controller {
	if o.Window <= 0 {
		o.Window = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Controller{q: q, o: o}
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

// Step runs the controller for room on the window that ended before now.
// Only the caller that takes the window's lease acts; the others get
// Leader false. Errors: ErrRoomNotFound, ErrUnavailable.
func (c *Controller) Step(ctx context.Context, room string, now time.Time) (Step, error) {
	if !ValidRoom(room) {
		return Step{}, ErrRoomNotFound
	}
	k := c.q.keys(room)
	w := windowOf(now, c.o.Window) - 1
	st := Step{Window: w}
	ok, err := c.q.rdb.SetNX(ctx, k.leaseKey(w), c.o.Owner, 2*c.o.Window).Result()
	if err != nil {
		return st, unavailable("adaptive lease", err)
	}
	if !ok {
		return st, nil
	}
	st.Leader = true
	var cfg, sig, prev *redis.MapStringStringCmd
	var active *redis.IntCmd
	_, err = c.q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		cfg = p.HGetAll(ctx, k.cfg)
		active = p.ZCard(ctx, k.active)
		sig = p.HGetAll(ctx, k.signalsKey(w))
		prev = p.HGetAll(ctx, k.adaptive)
		return nil
	})
	if err != nil {
		return st, unavailable("adaptive read", err)
	}
	conf := cfg.Val()
	if len(conf) == 0 {
		return st, ErrRoomNotFound
	}
	s := windowSignals(sig.Val(), c.o.Window)
	old := decodeAdaptive(prev.Val())
	rule := c.o.Rule
	// The gradient compares with the baseline before this window joins it.
	s.Baseline = old.Signals.Baseline
	st.Limit, _ = strconv.ParseInt(conf["target"], 10, 64)
	st.Next, st.Reason = st.Limit, ""
	if Mode(conf["mode"]) == ModeAdaptive {
		lo, _ := strconv.ParseInt(conf["min_active"], 10, 64)
		hi, _ := strconv.ParseInt(conf["max_active"], 10, 64)
		rule = rule.WithBounds(lo, hi)
		st.Next, st.Reason = NextLimit(st.Limit, active.Val(), s, rule)
	}
	// A stressed window does not raise the baseline: the baseline is what
	// the downstream does when healthy.
	stressed := st.Reason == ReasonErrors || st.Reason == ReasonPoolWait || st.Reason == ReasonCeiling
	s.Baseline = NextBaseline(old.Signals.Baseline, s.P90, s.Orders >= max(rule.MinSamples, 1) && !stressed)
	st.Signals = s
	to := ""
	if st.Next != st.Limit {
		to = strconv.FormatInt(st.Next, 10)
	}
	args := []any{st.Limit, to, st.Reason, now.UnixMilli(),
		"at", now.UnixMilli(), "win_ms", c.o.Window.Milliseconds(),
		"orders", s.Orders, "errors", s.Errors, "p90_us", s.P90.Microseconds(),
		"base_us", s.Baseline.Microseconds(), "wait_us", s.PoolWait.Microseconds(), "stale", boolField(s.Stale)}
	n, err := adaptScript.Run(ctx, c.q.rdb, []string{k.cfg, k.adaptive}, args...).Int64()
	if err != nil {
		return st, unavailable("adapt", err)
	}
	st.Changed = n == 1
	return st, nil
}

// windowSignals reads one window's signals hash.
func windowSignals(m map[string]string, window time.Duration) Signals {
	num := func(f string) int64 { n, _ := strconv.ParseInt(m[f], 10, 64); return n }
	s := Signals{Window: window, Orders: num("orders"), Errors: num("errors"), Stale: len(m) == 0}
	if acq := num("acquires"); acq > 0 {
		s.PoolWait = time.Duration(num("wait_us")/acq) * time.Microsecond
	}
	counts := make([]int64, len(latencyBuckets)+1)
	for i := range counts {
		counts[i] = num("b" + strconv.Itoa(i))
	}
	s.P90 = quantile(counts, 0.9)
	return s
}

// Run steps every room half a window after each window ends, until ctx is
// done.
func (c *Controller) Run(ctx context.Context) {
	loop.Paced(ctx, c.untilNextStep(time.Now()), func(ctx context.Context) time.Duration {
		c.StepAll(ctx, time.Now())
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

// StepAll runs Step for every room and logs each change.
func (c *Controller) StepAll(ctx context.Context, now time.Time) {
	rooms, err := c.q.Rooms(ctx)
	if err != nil {
		return // the admission loop logs Redis outages
	}
	for _, room := range rooms {
		st, err := c.Step(ctx, room, now)
		if err != nil && ctx.Err() != nil {
			return // shutting down
		}
		if err != nil {
			if !errors.Is(err, ErrRoomNotFound) && !errors.Is(err, ErrUnavailable) {
				c.o.Logger.LogAttrs(ctx, slog.LevelWarn, "adaptive step failed", slog.String("room", room), slog.String("error", err.Error()))
			}
			continue
		}
		if st.Changed {
			s := st.Signals
			c.o.Logger.LogAttrs(ctx, slog.LevelInfo, "admission limit changed",
				slog.String("room", room), slog.Int64("from", st.Limit), slog.Int64("to", st.Next),
				slog.String("reason", st.Reason), slog.Int64("window", st.Window),
				slog.Int64("orders", s.Orders), slog.Float64("errorRate", s.ErrorRate()),
				slog.Duration("p90", s.P90), slog.Duration("baselineP90", s.Baseline),
				slog.Duration("poolWait", s.PoolWait))
			if c.o.OnChange != nil {
				c.o.OnChange(room, st)
			}
		}
		if c.o.OnStep == nil {
			continue
		}
		state, err := c.q.AdaptiveState(ctx, room)
		if err != nil {
			continue
		}
		limit := st.Limit
		if st.Changed {
			limit = st.Next
		} else if info, err := c.q.Room(ctx, room); err == nil {
			limit = info.Target
		}
		c.o.OnStep(room, state, limit)
	}
}

// String is for logs.
func (s Step) String() string {
	return fmt.Sprintf("window %d leader %v limit %d→%d (%s)", s.Window, s.Leader, s.Limit, s.Next, s.Reason)
}
