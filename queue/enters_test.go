package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"waitingroom/queue"
)

func TestEntersPipelinesEntersInOrder(t *testing.T) {
	q, rdb := mustQueue(t, 0, time.Minute)
	ctx := context.Background()
	first := mustEnter(t, q, "carol")
	// carol keeps her place; the others are new, ticketed in the order given.
	sts, errs, err := q.Enters(ctx, "r1", "alice", "bob", "carol", "dave")
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 4 || len(errs) != 4 {
		t.Fatalf("got %d statuses and %d errors, want 4 each", len(sts), len(errs))
	}
	for i, e := range errs {
		if e != nil {
			t.Fatalf("errs[%d] = %v", i, e)
		}
	}
	if sts[2].New || sts[2].Ticket != first.Ticket || sts[2].Position != 1 {
		t.Fatalf("carol again = %+v, want her first ticket %d at position 1, not new", sts[2], first.Ticket)
	}
	want := []struct {
		user string
		pos  int64
		i    int
	}{{"alice", 2, 0}, {"bob", 3, 1}, {"dave", 4, 3}}
	for _, w := range want {
		st := sts[w.i]
		if !st.New || st.State != queue.Waiting || st.Position != w.pos {
			t.Fatalf("%s = %+v, want new, WAITING at %d", w.user, st, w.pos)
		}
	}
	if !(sts[0].Ticket < sts[1].Ticket && sts[1].Ticket < sts[3].Ticket) {
		t.Fatalf("tickets %d, %d, %d: want ascending in the order given", sts[0].Ticket, sts[1].Ticket, sts[3].Ticket)
	}
	got, err := rdb.ZCard(ctx, q.RoomKey("r1", "queue")).Result()
	if err != nil || got != 4 {
		t.Fatalf("queue length %d (%v), want 4", got, err)
	}
}

func TestEntersRefusals(t *testing.T) {
	q, _ := mustQueue(t, 0, time.Minute)
	ctx := context.Background()
	mustEnter(t, q, "alice")
	paused := true
	if _, err := q.UpdateRoom(ctx, "r1", queue.RoomUpdate{Paused: &paused}, false, queue.RoomConfig{}); err != nil {
		t.Fatal(err)
	}
	sts, errs, err := q.Enters(ctx, "r1", "alice", "bob")
	if err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || sts[0].State != queue.Waiting || !sts[0].Paused {
		t.Fatalf("alice in a paused room = %+v, %v; want WAITING, paused", sts[0], errs[0])
	}
	if errs[1] != nil || sts[1].State != queue.Waiting || !sts[1].Paused || !sts[1].New {
		t.Fatalf("bob in a paused room = %+v, %v; want a new WAITING place, paused", sts[1], errs[1])
	}
	reject := queue.MethodReject
	if _, err := q.UpdateRoom(ctx, "r1", queue.RoomUpdate{Method: &reject}, false, queue.RoomConfig{}); err != nil {
		t.Fatal(err)
	}
	if _, errs, err := q.Enters(ctx, "r1", "carol"); err != nil || !errors.Is(errs[0], queue.ErrRoomClosed) {
		t.Fatalf("carol in a closed room: %v, %v; want ErrRoomClosed", errs, err)
	}
	if _, _, err := q.Enters(ctx, "nosuchroom", "alice"); !errors.Is(err, queue.ErrRoomNotFound) {
		t.Fatalf("missing room: %v, want ErrRoomNotFound", err)
	}
	if _, _, err := q.Enters(ctx, "Bad{Room}", "alice"); !errors.Is(err, queue.ErrRoomNotFound) {
		t.Fatalf("invalid room: %v, want ErrRoomNotFound", err)
	}
}
