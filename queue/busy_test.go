package queue_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"waitingroom/queue"
	"waitingroom/queue/queuetest"
)

// TestBusy: a room is busy while someone waits, is pre-queued or holds an
// admission, and idle again once they are gone; invalid names and rooms
// that do not exist are idle; the answer keeps the order asked.
func TestBusy(t *testing.T) {
	q, rdb := queuetest.Queue(t, 1, 0)
	ctx := context.Background()
	for _, r := range []string{"waits", "admitted", "pre", "idle"} {
		cfg := queue.RoomConfig{Target: 1, EntryTTL: time.Minute}
		if r == "pre" {
			cfg.OpensAt = time.Now().Add(time.Hour)
		}
		if err := q.EnsureRoom(ctx, r, cfg); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range []struct{ room, user string }{{"waits", "a"}, {"waits", "b"}, {"admitted", "c"}, {"pre", "d"}} {
		if _, err := q.Enter(ctx, e.room, e.user); err != nil {
			t.Fatal(err)
		}
	}
	// waits: a admitted, b waits; admitted: c admitted, nobody waits.
	for _, r := range []string{"waits", "admitted"} {
		if _, err := q.Admit(ctx, r, 1); err != nil {
			t.Fatal(err)
		}
	}
	rooms := []string{"waits", "admitted", "pre", "idle", "nosuch", "Bad{Room}"}
	busy, err := q.Busy(ctx, rooms)
	if want := []bool{true, true, true, false, false, false}; err != nil || !slices.Equal(busy, want) {
		t.Fatalf("busy = %v, %v; want %v", busy, err, want)
	}
	// Everyone leaves or is done: the rooms are idle again.
	if _, err := q.Leave(ctx, "pre", "d"); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Del(ctx, q.RoomKey("admitted", "active")).Err(); err != nil {
		t.Fatal(err)
	}
	if busy, err := q.Busy(ctx, rooms[1:3]); err != nil || !slices.Equal(busy, []bool{false, false}) {
		t.Fatalf("after leaving: busy = %v, %v; want idle", busy, err)
	}
	if busy, err := q.Busy(ctx, nil); err != nil || len(busy) != 0 {
		t.Fatalf("no rooms: %v, %v", busy, err)
	}
	_ = rdb.Close()
	if _, err := q.Busy(ctx, rooms); !errors.Is(err, queue.ErrUnavailable) {
		t.Fatalf("Redis closed: %v, want ErrUnavailable", err)
	}
}
