package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"waitingroom/queue"
	"waitingroom/queue/queuetest"
)

// TestPausedAndMessageAreSaid: a paused room and the operator's message are
// carried by every waiting status — entering again, polling, the
// pre-queue, a closed room — and by the snapshot, and each change is
// published as one config event carrying both. READY carries neither.
func TestPausedAndMessageAreSaid(t *testing.T) {
	q, _ := mustQueue(t, 0, time.Minute)
	ctx := context.Background()
	mustEnter(t, q, "a")
	next, _ := mustSubscribe(t, q)
	queuetest.Update(t, q, "r1", queue.RoomUpdate{Paused: ptr(true), Message: ptr("back at 10:30\nthanks")})
	n, _ := next()
	e := n.Event
	if e.Kind != queue.EventConfig || e.Paused == nil || !*e.Paused || e.Message == nil || *e.Message != "back at 10:30\nthanks" {
		t.Fatalf("config event = %+v", n)
	}
	for what, read := range map[string]func() (queue.Status, error){
		"status": func() (queue.Status, error) { return q.Status(ctx, "r1", "a") },
		"enter":  func() (queue.Status, error) { return q.Enter(ctx, "r1", "a") },
	} {
		st, err := read()
		if err != nil || st.State != queue.Waiting || !st.Paused || st.Message != "back at 10:30\nthanks" {
			t.Fatalf("%s while paused = %+v, %v", what, st, err)
		}
	}
	snaps, err := q.Snapshots(ctx, []string{"r1"})
	if err != nil || !snaps[0].Paused || snaps[0].Message != "back at 10:30\nthanks" {
		t.Fatalf("snapshot = %+v, %v", snaps, err)
	}
	// Resumed and the message cleared: said the same way.
	queuetest.Update(t, q, "r1", queue.RoomUpdate{Paused: ptr(false), Message: ptr("")})
	if n, _ := next(); n.Event.Paused == nil || *n.Event.Paused || n.Event.Message == nil || *n.Event.Message != "" {
		t.Fatalf("config event after resuming = %+v", n)
	}
	if st, _ := q.Status(ctx, "r1", "a"); st.Paused || st.Message != "" {
		t.Fatalf("status after resuming = %+v", st)
	}
	// The pre-queue and a closed room say them too.
	queuetest.Update(t, q, "r1", queue.RoomUpdate{OpensAt: ptr(time.Now().Add(time.Hour)), Message: ptr("soon")})
	if st := mustEnter(t, q, "p"); st.State != queue.PreQueue || st.Message != "soon" || st.Paused {
		t.Fatalf("pre-queue = %+v", st)
	}
	queuetest.Update(t, q, "r1", queue.RoomUpdate{Method: ptr(queue.MethodReject), Paused: ptr(true)})
	if st, _ := q.Status(ctx, "r1", "a"); st.State != queue.Closed || !st.Paused || st.Message != "soon" {
		t.Fatalf("closed = %+v", st)
	}
	// READY carries neither.
	g, err := q.Grant(ctx, "r1", "a")
	if err != nil || g.Paused || g.Message != "" {
		t.Fatalf("grant = %+v, %v", g, err)
	}
	if st, _ := q.Status(ctx, "r1", "a"); st.State != queue.Ready || st.Paused || st.Message != "" {
		t.Fatalf("READY = %+v", st)
	}
}

// TestIdleDropIsRemembered: a waiting user the admission run drops as idle
// reads as ErrIdle (which is ErrNotInQueue) from Status, Statuses and
// Leave, for a bounded time; entering again or a grant forgets it, and a
// user who never entered, or left, is plainly not in the queue.
func TestIdleDropIsRemembered(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	q := queue.New(rdb, queue.Options{Prefix: prefix, IdleTimeout: 200 * time.Millisecond})
	ctx := context.Background()
	if err := q.EnsureRoom(ctx, "r1", queue.RoomConfig{Target: 0, EntryTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"idle1", "idle2", "left"} {
		mustEnter(t, q, u)
	}
	if _, err := q.Leave(ctx, "r1", "left"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if res := mustAdmit(t, q, 8); res.Abandoned != 2 {
		t.Fatalf("admit = %+v, want 2 dropped as idle", res)
	}
	_, err := q.Status(ctx, "r1", "idle1")
	if !errors.Is(err, queue.ErrIdle) || !errors.Is(err, queue.ErrNotInQueue) {
		t.Fatalf("status of a user dropped as idle = %v, want ErrIdle (an ErrNotInQueue)", err)
	}
	_, errs, err := q.Statuses(ctx, "r1", []string{"idle2", "left", "never"})
	if err != nil || !errors.Is(errs[0], queue.ErrIdle) || errors.Is(errs[1], queue.ErrIdle) || errors.Is(errs[2], queue.ErrIdle) ||
		!errors.Is(errs[1], queue.ErrNotInQueue) || !errors.Is(errs[2], queue.ErrNotInQueue) {
		t.Fatalf("statuses = %v, %v; want idle, then plainly not in queue twice", errs, err)
	}
	if res, err := q.Leave(ctx, "r1", "idle2"); err != nil || !res.Idle || res.WasWaiting {
		t.Fatalf("leave after the drop = %+v, %v", res, err)
	}
	if res, _ := q.Leave(ctx, "r1", "never"); res.Idle {
		t.Fatal("leave of a user never in the queue says idle")
	}
	// The memory is bounded: the idle set expires (a day after the last drop).
	if ttl := rdb.PTTL(ctx, q.RoomKey("r1", "idle")).Val(); ttl < 23*time.Hour || ttl > 24*time.Hour {
		t.Fatalf("idle set TTL = %v, want about a day", ttl)
	}
	// Entering again forgets the drop; so does a grant.
	if st := mustEnter(t, q, "idle1"); !st.New || st.State != queue.Waiting {
		t.Fatalf("re-enter = %+v", st)
	}
	if _, err := q.Leave(ctx, "r1", "idle1"); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Status(ctx, "r1", "idle1"); !errors.Is(err, queue.ErrNotInQueue) || errors.Is(err, queue.ErrIdle) {
		t.Fatalf("after entering again and leaving = %v, want plain ErrNotInQueue", err)
	}
	if _, err := q.Grant(ctx, "r1", "idle2"); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Leave(ctx, "r1", "idle2"); err != nil {
		t.Fatal(err)
	}
	if res, _ := q.Leave(ctx, "r1", "idle2"); res.Idle {
		t.Fatal("a grant did not forget the drop")
	}
}

// TestRoomTexts: the message, display name and description are stored,
// read back by Room, RoomConfigs (every room, one pipeline) and ConfigOf
// (one room), and cleared by "".
func TestRoomTexts(t *testing.T) {
	q, _ := mustQueue(t, 0, time.Minute)
	ctx := context.Background()
	info := queuetest.Update(t, q, "r1", queue.RoomUpdate{Message: ptr("hi"), DisplayName: ptr("Winter sale"), Description: ptr("Coats\nand hats")})
	if info.Message != "hi" || info.DisplayName != "Winter sale" || info.Description != "Coats\nand hats" {
		t.Fatalf("room = %+v", info.RoomConfig)
	}
	if _, err := q.UpdateRoom(ctx, "r2", queue.RoomUpdate{}, true, queue.RoomConfig{Target: 3, Method: queue.MethodRandom}); err != nil {
		t.Fatal(err)
	}
	cfgs, err := q.RoomConfigs(ctx)
	if err != nil || len(cfgs) != 2 || cfgs["r1"].DisplayName != "Winter sale" || cfgs["r2"].Method != queue.MethodRandom || cfgs["r2"].Target != 3 {
		t.Fatalf("room configs = %+v, %v", cfgs, err)
	}
	if c, err := q.ConfigOf(ctx, "r2"); err != nil || c != cfgs["r2"] {
		t.Fatalf("ConfigOf(r2) = %+v, %v, want %+v", c, err, cfgs["r2"])
	}
	for _, room := range []string{"nope", "{bad}"} {
		if _, err := q.ConfigOf(ctx, room); !errors.Is(err, queue.ErrRoomNotFound) {
			t.Fatalf("ConfigOf(%s): %v, want ErrRoomNotFound", room, err)
		}
	}
	info = queuetest.Update(t, q, "r1", queue.RoomUpdate{Message: ptr(""), DisplayName: ptr("")})
	if info.Message != "" || info.DisplayName != "" || info.Description != "Coats\nand hats" {
		t.Fatalf("after clearing = %+v", info.RoomConfig)
	}
}
