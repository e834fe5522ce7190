package queue_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"waitingroom/queue"
	"waitingroom/queue/queuetest"
)

// TestDeleteRoom: an unforced delete refuses a room anyone is in and
// changes nothing; a forced one removes the room, the users in it and the
// keys named beside it, tells the streams, and the name leaves the room
// set; a room created again under the name starts afresh.
func TestDeleteRoom(t *testing.T) {
	q, rdb := queuetest.Queue(t, 1, time.Minute)
	ctx := context.Background()
	queuetest.Enter(t, q, "a", "b", "c")
	queuetest.Admit(t, q, 1) // a admitted; b, c wait
	// State another package keeps under the room's tag.
	if err := rdb.HSet(ctx, q.RoomKey("r1", "beside"), "x", "1").Err(); err != nil {
		t.Fatal(err)
	}
	d, err := q.DeleteRoom(ctx, "r1", false, "beside")
	if want := (queue.Deleted{Waiting: 2, Admitted: 1}); !errors.Is(err, queue.ErrRoomNotEmpty) || d != want {
		t.Fatalf("unforced: %+v, %v; want %+v, ErrRoomNotEmpty", d, err, want)
	}
	if st, err := q.Status(ctx, "r1", "b"); err != nil || st.State != queue.Waiting {
		t.Fatalf("after the refusal b is %v, %v; want waiting", st.State, err)
	}

	sub := rdb.Subscribe(ctx, q.EventChannel("r1"))
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	d, err = q.DeleteRoom(ctx, "r1", true, "beside")
	if want := (queue.Deleted{Waiting: 2, Admitted: 1}); err != nil || d != want {
		t.Fatalf("forced: %+v, %v; want %+v", d, err, want)
	}
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := queue.ParseEventForTest(msg.Payload); err != nil || ev.Serving != 3 || ev.Waiting != 0 || ev.Sched != 1 {
		t.Fatalf("event %s: %+v, %v; want serving 3 (the last ticket), waiting 0, sched 1", msg.Payload, ev, err)
	}
	keys, err := rdb.Keys(ctx, q.RoomKey("r1", "*")).Result()
	if err != nil || len(keys) != 0 {
		t.Fatalf("keys left under the room's tag: %v, %v", keys, err)
	}
	if names, err := q.Rooms(ctx); err != nil || slices.Contains(names, "r1") {
		t.Fatalf("rooms = %v, %v; want r1 gone", names, err)
	}
	if _, err := q.Status(ctx, "r1", "b"); !errors.Is(err, queue.ErrNotInQueue) {
		t.Fatalf("b after the delete: %v, want ErrNotInQueue", err)
	}
	if _, err := q.Enter(ctx, "r1", "d"); !errors.Is(err, queue.ErrRoomNotFound) {
		t.Fatalf("enter after the delete: %v, want ErrRoomNotFound", err)
	}
	if _, err := q.DeleteRoom(ctx, "r1", true); !errors.Is(err, queue.ErrRoomNotFound) {
		t.Fatalf("deleted twice: %v, want ErrRoomNotFound", err)
	}

	// Created again: nothing of the old room is inherited.
	if err := q.EnsureRoom(ctx, "r1", queue.RoomConfig{Target: 1, EntryTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	st := queuetest.Enter(t, q, "e")
	if st.Ticket != 1 || st.Position != 1 {
		t.Fatalf("first in the new room: ticket %d position %d; want 1, 1", st.Ticket, st.Position)
	}
	if info, err := q.Room(ctx, "r1"); err != nil || info.Entered != 1 || info.Admitted != 0 || info.Active != 0 {
		t.Fatalf("new room: %+v, %v; want only e's entry counted", info, err)
	}
}

// TestDeleteRoomEmpty: a room nobody is in goes without force, and
// publishes nothing; invalid names and missing rooms are ErrRoomNotFound;
// Redis down is ErrUnavailable.
func TestDeleteRoomEmpty(t *testing.T) {
	q, rdb := queuetest.Queue(t, 1, time.Minute)
	ctx := context.Background()
	if d, err := q.DeleteRoom(ctx, "r1", false); err != nil || d.Anyone() {
		t.Fatalf("empty room: %+v, %v", d, err)
	}
	for _, room := range []string{"r1", "nosuch", "Bad{Room}"} {
		if _, err := q.DeleteRoom(ctx, room, true); !errors.Is(err, queue.ErrRoomNotFound) {
			t.Fatalf("%q: %v, want ErrRoomNotFound", room, err)
		}
	}
	_ = rdb.Close()
	if _, err := q.DeleteRoom(ctx, "r2", false); !errors.Is(err, queue.ErrUnavailable) {
		t.Fatalf("Redis closed: %v, want ErrUnavailable", err)
	}
}

// TestDeleteRoomRacingEnters: enters racing an unforced delete are never
// lost silently: each one either is refused as room_not_found (it came
// after) or made the delete refuse (it came before, and still waits).
func TestDeleteRoomRacingEnters(t *testing.T) {
	for round := range 20 {
		q, _ := queuetest.Queue(t, 1, time.Minute)
		ctx := context.Background()
		const users = 8
		var wg sync.WaitGroup
		errs := make([]error, users)
		start := make(chan struct{})
		for i := range users {
			wg.Go(func() {
				<-start
				_, errs[i] = q.Enter(ctx, "r1", "u"+string(rune('a'+i)))
			})
		}
		var derr error
		wg.Go(func() {
			<-start
			_, derr = q.DeleteRoom(ctx, "r1", false)
		})
		close(start)
		wg.Wait()
		entered := 0
		for i, err := range errs {
			switch {
			case err == nil:
				entered++
				if _, err := q.Status(ctx, "r1", "u"+string(rune('a'+i))); derr == nil || err != nil {
					t.Fatalf("round %d: user %d entered, the delete said %v, their status %v", round, i, derr, err)
				}
			case !errors.Is(err, queue.ErrRoomNotFound):
				t.Fatalf("round %d: enter: %v", round, err)
			}
		}
		switch {
		case entered == 0 && derr != nil:
			t.Fatalf("round %d: nobody entered, yet the delete said %v", round, derr)
		case entered > 0 && !errors.Is(derr, queue.ErrRoomNotEmpty):
			t.Fatalf("round %d: %d entered, the delete said %v; want ErrRoomNotEmpty", round, entered, derr)
		}
	}
}
