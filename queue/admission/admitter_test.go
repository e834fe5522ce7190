package admission_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue"
	"waitingroom/queue/admission"
	"waitingroom/queue/members"
	"waitingroom/queue/queuetest"
)

// commandCounter counts the commands a client sends (pipelines: each of
// their commands), the cost the admitter must keep apart from idle rooms.
// A script Redis has not cached yet is not counted twice: the EVALSHA
// answered NOSCRIPT, and a SCRIPT LOAD sent to recover from it, are left
// out, and the command that runs the script counts. Whether a script is
// cached depends on what ran on that Redis before (a fresh one in CI
// knows none), not on the admitter.
type commandCounter struct{ n atomic.Int64 }

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		c.count(cmd, err) // a command sent alone: its error is next's
		return err
	}
}
func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			c.count(cmd, cmd.Err())
		}
		return err
	}
}

func (c *commandCounter) count(cmd redis.Cmder, err error) {
	if redis.HasErrorPrefix(err, "NOSCRIPT") || cmd.Name() == "script" {
		return
	}
	c.n.Add(1)
}

// testLogger is an admitter's logger for tb: its lines (a room created,
// a room opened) go to the test's output, shown with -v or when tb
// fails, not to the process's stderr beside every other test.
func testLogger(tb testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tb.Output(), nil))
}

// manyRooms creates n idle rooms r0 … r<n-1> with target and ttl.
func manyRooms(t *testing.T, q *queue.Queue, n int, target int64, ttl time.Duration) []string {
	t.Helper()
	rooms := make([]string, n)
	for i := range rooms {
		rooms[i] = fmt.Sprintf("r%d", i)
		if err := q.EnsureRoom(context.Background(), rooms[i], queue.RoomConfig{Target: target, EntryTTL: ttl}); err != nil {
			t.Fatal(err)
		}
	}
	return rooms
}

func mustTick(t *testing.T, a *admission.Admitter) {
	t.Helper()
	if err := a.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// stateOf is user's state in room.
func stateOf(t *testing.T, q *queue.Queue, room, user string) queue.State {
	t.Helper()
	st, err := q.Status(context.Background(), room, user)
	if err != nil {
		t.Fatalf("status of %s in %s: %v", user, room, err)
	}
	return st.State
}

// TestAdmitterIdleRoomsCostNothing: with wake-ups wired, a tick over 200
// idle rooms sends no command for any of them (the same few as over one),
// a woken room is admitted at the next tick, and a room nobody woke is
// found by the next sweep.
func TestAdmitterIdleRoomsCostNothing(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	var count commandCounter
	rdb.AddHook(&count)
	q := queue.New(rdb, queue.Options{Prefix: prefix})
	ctx := context.Background()
	manyRooms(t, q, 200, 10, time.Minute)
	var runs sync.Map // room → runs
	a := admission.New(q, admission.Options{Woken: true, SweepEvery: time.Hour,
		OnAdmit: func(r queue.AdmitResult) {
			n, _ := runs.LoadOrStore(r.Room, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
		}})
	mustTick(t, a) // the first tick sweeps: one read of each room
	before := count.n.Load()
	for range 5 {
		mustTick(t, a)
	}
	if n := count.n.Load() - before; n != 0 {
		t.Fatalf("5 ticks over 200 idle rooms sent %d commands, want 0", n)
	}
	runs.Range(func(k, _ any) bool { t.Fatalf("idle room %v was run", k); return false })

	// Someone enters r17: the enter's event wakes it (the hub hands it to
	// Wake); the next tick admits them, running r17 alone.
	if _, err := q.Enter(ctx, "r17", "alice"); err != nil {
		t.Fatal(err)
	}
	a.Wake("r17")
	before = count.n.Load()
	mustTick(t, a)
	if s := stateOf(t, q, "r17", "alice"); s != queue.Ready {
		t.Fatalf("alice after the tick: %v, want READY", s)
	}
	if n := count.n.Load() - before; n > 3 {
		t.Fatalf("the tick that ran r17 sent %d commands, want r17's run alone", n)
	}
	// Nobody waits in r17 any more, alice holds her slot until the window
	// ends (a minute): no run until then.
	before = count.n.Load()
	mustTick(t, a)
	mustTick(t, a)
	if n := count.n.Load() - before; n != 0 {
		t.Fatalf("ticks with r17 holding only an admission sent %d commands, want 0", n)
	}

	// bob enters r42 and nobody wakes it (an event lost): the next sweep
	// finds the work.
	if _, err := q.Enter(ctx, "r42", "bob"); err != nil {
		t.Fatal(err)
	}
	mustTick(t, a)
	if s := stateOf(t, q, "r42", "bob"); s != queue.Waiting {
		t.Fatalf("bob before a sweep: %v, want WAITING (no wake-up, no sweep due)", s)
	}
	a.Resweep()
	mustTick(t, a)
	if s := stateOf(t, q, "r42", "bob"); s != queue.Ready {
		t.Fatalf("bob after the sweep: %v, want READY", s)
	}
	if got := a.Running(); !slices.Equal(got, []string{"r17", "r42"}) {
		t.Fatalf("running %q, want r17 and r42 (their admissions are live)", got)
	}
}

// TestAdmitterWithoutWakeupsSweepsEveryTick: an admitter that is handed no
// events looks at every room each tick, so nothing waits for a wake-up.
func TestAdmitterWithoutWakeupsSweepsEveryTick(t *testing.T) {
	q, _ := queuetest.Queue(t, 5, time.Minute)
	a := admission.New(q, admission.Options{})
	mustTick(t, a)
	queuetest.Enter(t, q, "alice")
	mustTick(t, a)
	if s := stateOf(t, q, "r1", "alice"); s != queue.Ready {
		t.Fatalf("alice: %v, want READY at the next tick", s)
	}
}

// TestAdmitterRunsOnlyAdmissionsDue: a room holding only admissions is
// run again at the earliest entry deadline (to prune it), not every tick.
func TestAdmitterRunsOnlyAdmissionsDue(t *testing.T) {
	q, _ := queuetest.Queue(t, 5, 300*time.Millisecond)
	var runs atomic.Int64
	a := admission.New(q, admission.Options{Woken: true, SweepEvery: time.Hour, OnAdmit: func(queue.AdmitResult) { runs.Add(1) }})
	queuetest.Enter(t, q, "alice")
	mustTick(t, a) // sweep: r1 has work; alice admitted
	if s := stateOf(t, q, "r1", "alice"); s != queue.Ready {
		t.Fatalf("alice: %v, want READY", s)
	}
	n := runs.Load()
	mustTick(t, a)
	if runs.Load() != n {
		t.Fatal("a room holding only an admission was run before its deadline")
	}
	// Past the deadline the next tick prunes it, and the room is idle.
	queuetest.WaitFor(t, "r1 pruned and dropped after its only admission's deadline", func() bool {
		mustTick(t, a)
		return !slices.Contains(a.Running(), "r1")
	})
	info, err := q.Room(context.Background(), "r1")
	if err != nil || info.Active != 0 || info.Expired != 1 {
		t.Fatalf("after the deadline: %+v, %v; want alice's admission pruned", info, err)
	}
}

// TestAdmittersShareRooms: two instances share 60 busy rooms, each run by
// exactly one of them (OnAdmit tells who); when one leaves, the other runs
// its rooms from its next tick; when one stops beating without leaving (a
// crash), the other takes over once it expires.
func TestAdmittersShareRooms(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	q := queue.New(rdb, queue.Options{Prefix: prefix})
	ctx := context.Background()
	rooms := manyRooms(t, q, 60, 1, time.Hour)
	key := prefix + "instances"
	type inst struct {
		m    *members.Members
		a    *admission.Admitter
		runs sync.Map
	}
	newInst := func(id string) *inst {
		in := &inst{m: members.New(rdb, members.Options{Key: key, ID: id, Expiry: time.Hour})}
		in.a = admission.New(q, admission.Options{Woken: true, Members: in.m, SweepEvery: time.Hour,
			OnAdmit: func(r queue.AdmitResult) { in.runs.Store(r.Room, true) }})
		return in
	}
	x, y := newInst("x"), newInst("y")
	// Both beat once first, so that each knows the other.
	for _, in := range []*inst{x, y} {
		if _, err := in.m.Beat(ctx); err != nil {
			t.Fatal(err)
		}
	}
	enterAll := func(user string) {
		for _, r := range rooms {
			if _, err := q.Enter(ctx, r, user); err != nil {
				t.Fatal(err)
			}
		}
	}
	enterAll("first")
	mustTick(t, x.a)
	mustTick(t, y.a)
	ran := func(in *inst) map[string]bool {
		out := map[string]bool{}
		in.runs.Range(func(k, _ any) bool { out[k.(string)] = true; return true })
		in.runs.Clear()
		return out
	}
	rx, ry := ran(x), ran(y)
	for _, r := range rooms {
		if rx[r] == ry[r] {
			t.Fatalf("room %s run by x: %v, by y: %v; want exactly one", r, rx[r], ry[r])
		}
		if s := stateOf(t, q, r, "first"); s != queue.Ready {
			t.Fatalf("first in %s: %v, want READY", r, s)
		}
	}
	if len(rx) == 0 || len(ry) == 0 {
		t.Fatalf("x ran %d rooms, y %d: not shared", len(rx), len(ry))
	}

	// y stops cleanly: x runs every room from its next tick. Each room is
	// full (target 1, "first" holds it for an hour): second waits, the
	// target holds across the hand-over.
	enterAll("second")
	if err := y.m.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	mustTick(t, x.a) // beats, sees y gone, sweeps: every room has work
	if got := len(x.a.Running()); got != len(rooms) {
		t.Fatalf("x runs %d rooms after y left, want %d", got, len(rooms))
	}
	for _, r := range rooms {
		info, err := q.Room(ctx, r)
		if err != nil || info.Active != 1 || info.Waiting != 1 {
			t.Fatalf("%s after the hand-over: %+v, %v; want one active, one waiting", r, info, err)
		}
	}

	// y comes back, then crashes: it stops beating without leaving. Its
	// last beat is moved an hour back (the expiry): x's next beat drops it
	// and x runs everything again.
	if _, err := y.m.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	mustTick(t, x.a)
	mustTick(t, y.a)
	if n := len(x.a.Running()); n == len(rooms) || n == 0 {
		t.Fatalf("x runs %d of %d rooms with y back, want a share", n, len(rooms))
	}
	tm, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZAdd(ctx, key, redis.Z{Score: float64(tm.Add(-2 * time.Hour).UnixMilli()), Member: "y"}).Err(); err != nil {
		t.Fatal(err)
	}
	mustTick(t, x.a)
	if got := len(x.a.Running()); got != len(rooms) {
		t.Fatalf("x runs %d rooms after y crashed, want %d", got, len(rooms))
	}
}

// TestAdmittersAtOnceNeverPassTheTarget: two instances that both think
// they own every room (views that differ during a hand-over) tick side by
// side over busy rooms: active never passes any room's target.
func TestAdmittersAtOnceNeverPassTheTarget(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	q := queue.New(rdb, queue.Options{Prefix: prefix})
	ctx := context.Background()
	rooms := manyRooms(t, q, 8, 3, time.Hour)
	for _, r := range rooms {
		for i := range 10 {
			if _, err := q.Enter(ctx, r, fmt.Sprint("u", i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	var wg sync.WaitGroup
	for range 2 {
		a := admission.New(q, admission.Options{}) // no Members: owns every room
		wg.Go(func() {
			for range 20 {
				if err := a.Tick(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, r := range rooms {
		info, err := q.Room(ctx, r)
		if err != nil || info.Active != 3 || info.Waiting != 7 {
			t.Fatalf("%s: %+v, %v; want exactly the target (3) active", r, info, err)
		}
	}
}

// TestAdmitterRecreatesStoredRooms: a stored definition (the admin API's,
// kept in Postgres) is created with its own configuration, and created
// again at the next tick after Redis lost its data, not at the next sweep.
func TestAdmitterRecreatesStoredRooms(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	q := queue.New(rdb, queue.Options{Prefix: prefix})
	ctx := context.Background()
	stored := map[string]queue.RoomConfig{"launch": {Target: 7, EntryTTL: time.Minute, DisplayName: "The launch"}}
	a := admission.New(q, admission.Options{Logger: testLogger(t), Woken: true, SweepEvery: time.Hour, Rooms: []string{"main"},
		Defaults: queue.RoomConfig{Target: 3, EntryTTL: time.Minute},
		Stored:   func(context.Context) (map[string]queue.RoomConfig, error) { return stored, nil }})
	mustTick(t, a)
	check := func(when string) {
		t.Helper()
		info, err := q.Room(ctx, "launch")
		if err != nil || info.Target != 7 || info.DisplayName != "The launch" {
			t.Fatalf("%s: launch = %+v, %v", when, info, err)
		}
		if info, err := q.Room(ctx, "main"); err != nil || info.Target != 3 {
			t.Fatalf("%s: main = %+v, %v", when, info, err)
		}
	}
	check("after the first tick")
	keys, _ := rdb.Keys(ctx, prefix+"*").Result()
	rdb.Del(ctx, keys...)
	mustTick(t, a)
	check("after the data loss and one tick")
}

func TestAdmitterRecreatesConfiguredRooms(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	q := queue.New(rdb, queue.Options{Prefix: prefix})
	ctx := context.Background()
	a := admission.New(q, admission.Options{Logger: testLogger(t), Rooms: []string{"main"}, Defaults: queue.RoomConfig{Target: 3, EntryTTL: time.Minute}})
	if err := a.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := q.Room(ctx, "main")
	if err != nil || info.Target != 3 {
		t.Fatalf("room after the first tick = %+v, %v", info, err)
	}
	// Redis loses everything (a restart without persistence): the next tick
	// creates the room again.
	keys, _ := rdb.Keys(ctx, prefix+"*").Result()
	rdb.Del(ctx, keys...)
	if _, err := q.Enter(ctx, "main", "alice"); !errors.Is(err, queue.ErrRoomNotFound) {
		t.Fatalf("enter after data loss: %v", err)
	}
	if err := a.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := q.Enter(ctx, "main", "alice"); err != nil || st.Position != 1 {
		t.Fatalf("enter after the next tick = %+v, %v", st, err)
	}
}
