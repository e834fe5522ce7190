package queue_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"waitingroom/queue"
	"waitingroom/queue/queuetest"
)

// TestMissingRooms: a room is missing when its configuration is gone (what
// makes its enters ErrRoomNotFound), whatever its other keys; an invalid
// name is missing; the answer keeps the order asked; no room asks nothing.
func TestMissingRooms(t *testing.T) {
	q, rdb := queuetest.Queue(t, 1, 0)
	ctx := context.Background()
	if err := q.EnsureRoom(ctx, "r2", queue.RoomConfig{Target: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enter(ctx, "r2", "alice"); err != nil {
		t.Fatal(err)
	}
	missing, err := q.MissingRooms(ctx, []string{"r1", "r2", "gone", "Bad{Room}"})
	if err != nil || !slices.Equal(missing, []string{"gone", "Bad{Room}"}) {
		t.Fatalf("missing = %q, %v; want gone and Bad{Room}", missing, err)
	}
	// The configuration is lost, the queue is not: enters fail, so missing.
	if err := rdb.Del(ctx, q.RoomKey("r2", queue.ConfigKey)).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enter(ctx, "r2", "bob"); !errors.Is(err, queue.ErrRoomNotFound) {
		t.Fatalf("enter with the configuration lost: %v, want ErrRoomNotFound", err)
	}
	if missing, err := q.MissingRooms(ctx, []string{"r1", "r2"}); err != nil || !slices.Equal(missing, []string{"r2"}) {
		t.Fatalf("missing = %q, %v; want r2", missing, err)
	}
	if missing, err := q.MissingRooms(ctx, []string{"r1"}); err != nil || missing != nil {
		t.Fatalf("missing = %q, %v; want none", missing, err)
	}
	// No room: nothing to check, even with Redis closed.
	_ = rdb.Close()
	if missing, err := q.MissingRooms(ctx, nil); err != nil || missing != nil {
		t.Fatalf("no rooms: %q, %v", missing, err)
	}
	if _, err := q.MissingRooms(ctx, []string{"r1"}); !errors.Is(err, queue.ErrUnavailable) {
		t.Fatalf("Redis closed: %v, want ErrUnavailable", err)
	}
}
