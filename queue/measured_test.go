package queue_test

import (
	"context"
	"testing"
	"time"

	"waitingroom/queue"
)

// TestSnapshotCarriesTheExpectation: a room's snapshot carries the
// operator's expected order time and what the room measured last, both
// absent until set; clearing the expectation and deleting the room
// remove them.
func TestSnapshotCarriesTheExpectation(t *testing.T) {
	q, _ := mustQueue(t, 1, time.Minute)
	ctx := context.Background()
	if got := mustSnapshot(t, q, queue.GoneHeld{}).Expected; got != (queue.Expectation{}) {
		t.Fatalf("a fresh room expects %+v, want nothing", got)
	}
	order := 7500 * time.Millisecond
	if _, err := q.UpdateRoom(ctx, "r1", queue.RoomUpdate{ExpectedOrder: &order}, false, queue.RoomConfig{}); err != nil {
		t.Fatal(err)
	}
	if err := q.RecordMeasured(ctx, "r1", 6200*time.Millisecond, 0.125, 0.05); err != nil {
		t.Fatal(err)
	}
	want := queue.Expectation{Order: order, LastHold: 6200 * time.Millisecond, LastNoShow: 0.125, LastKnown: true, LastAbsent: 0.05, LastAbsentKnown: true}
	if got := mustSnapshot(t, q, queue.GoneHeld{}).Expected; got != want {
		t.Fatalf("expectation %+v, want %+v", got, want)
	}
	if r, err := q.Room(ctx, "r1"); err != nil || r.ExpectedOrder != order {
		t.Fatalf("room %+v, %v; want expected order %v", r.RoomConfig, err, order)
	}
	var zero time.Duration
	if _, err := q.UpdateRoom(ctx, "r1", queue.RoomUpdate{ExpectedOrder: &zero}, false, queue.RoomConfig{}); err != nil {
		t.Fatal(err)
	}
	if got := mustSnapshot(t, q, queue.GoneHeld{}).Expected; got.Order != 0 || !got.LastKnown {
		t.Fatalf("cleared: %+v, want the last measured only", got)
	}
	if _, err := q.DeleteRoom(ctx, "r1", true); err != nil {
		t.Fatal(err)
	}
	if err := q.EnsureRoom(ctx, "r1", queue.RoomConfig{Target: 1, EntryTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if got := mustSnapshot(t, q, queue.GoneHeld{}).Expected; got != (queue.Expectation{}) {
		t.Fatalf("made anew, the room expects %+v, want nothing", got)
	}
}

// TestMeasuredOutlivesNoRoom: what a room measured is kept only while the
// room exists: a write racing the room's delete leaves no key behind.
func TestMeasuredOutlivesNoRoom(t *testing.T) {
	q, rdb := mustQueue(t, 1, time.Minute)
	ctx := context.Background()
	if err := q.RecordMeasured(ctx, "never-made", time.Second, 0.1, 0); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.Exists(ctx, q.RoomKey("never-made", queue.MeasuredKey)).Result(); err != nil || n != 0 {
		t.Fatalf("a room that does not exist got its measured key: %d %v", n, err)
	}
	if err := q.RecordMeasured(ctx, "r1", time.Second, 0.1, 0); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.Exists(ctx, q.RoomKey("r1", queue.MeasuredKey)).Result(); n != 1 {
		t.Fatal("the room's measured figures were not kept")
	}
}
