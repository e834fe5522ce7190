package history_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"waitingroom/queue"
	"waitingroom/queue/history"
	"waitingroom/queue/queuetest"
)

// mustEnter is the shared helper (queuetest.Enter).
var mustEnter = queuetest.Enter

// mustRecord records r1 until a call records a point (the next second of
// Redis's clock), and returns the points.
func mustRecord(tb testing.TB, h *history.History) []history.Point {
	tb.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		ok, err := h.Record(context.Background(), "r1")
		if err != nil {
			tb.Fatal(err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatal("no second recorded within 3 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	pts, err := h.Since(context.Background(), "r1", 0)
	if err != nil {
		tb.Fatal(err)
	}
	return pts
}

// TestRecordOneInstancePerSecond: two instances recording the same room at
// once record one point per second between them; the points carry the
// room's figures and the admissions since the previous point.
func TestRecordOneInstancePerSecond(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	q := queue.New(rdb, queue.Options{Prefix: prefix})
	if err := q.EnsureRoom(context.Background(), "r1", queue.RoomConfig{Target: 2, EntryTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	// Two instances: each its own queue and history on the same Redis.
	a := history.New(rdb, q, nil)
	b := history.New(rdb, queue.New(rdb, queue.Options{Prefix: prefix}), nil)
	mustEnter(t, q, "u1", "u2", "u3", "u4", "u5")
	first := mustRecord(t, a)
	if len(first) != 1 {
		t.Fatalf("points after the first record: %d", len(first))
	}
	if p := first[0]; p.Waiting != 5 || p.Active != 0 || p.Target != 2 || p.Admitted != 0 {
		t.Fatalf("first point: %+v", p)
	}
	if _, err := q.Admit(context.Background(), "r1", 8); err != nil {
		t.Fatal(err)
	}
	// Both instances, many times each, within the next seconds.
	var recorded atomic.Int64
	var wg sync.WaitGroup
	for _, h := range []*history.History{a, b} {
		wg.Go(func() {
			for range 60 {
				if ok, err := h.Record(context.Background(), "r1"); err != nil {
					t.Error(err)
				} else if ok {
					recorded.Add(1)
				}
				time.Sleep(25 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	pts, err := b.Since(context.Background(), "r1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := int64(len(pts)) - 1; got != recorded.Load() || got < 1 || got > 3 {
		t.Fatalf("%d points recorded in about 1.5 s by two instances (calls that recorded: %d)", got, recorded.Load())
	}
	for i := 1; i < len(pts); i++ {
		if !pts[i].At.After(pts[i-1].At) {
			t.Fatalf("points out of order: %v then %v", pts[i-1].At, pts[i].At)
		}
	}
	if p := pts[1]; p.Waiting != 3 || p.Active != 2 || p.Admitted != 2 {
		t.Fatalf("the point after admitting two: %+v", p)
	}
	if p := pts[len(pts)-1]; len(pts) > 2 && p.Admitted != 0 {
		t.Fatalf("a later point counts the same admissions again: %+v", p)
	}
}

// TestSinceAndJSON: Since returns only the points after its time, and a
// point is a compact array of Fields.
func TestSinceAndJSON(t *testing.T) {
	q, rdb := queuetest.Queue(t, 3, time.Minute)
	h := history.New(rdb, q, nil)
	mustEnter(t, q, "u1")
	mustRecord(t, h)
	pts := mustRecord(t, h)
	if len(pts) != 2 {
		t.Fatalf("points: %d", len(pts))
	}
	after, err := h.Since(context.Background(), "r1", pts[0].At.UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 1 || !after[0].At.Equal(pts[1].At) {
		t.Fatalf("since the first point: %+v", after)
	}
	if none, _ := h.Since(context.Background(), "r1", pts[1].At.UnixMilli()); len(none) != 0 {
		t.Fatalf("since the last point: %+v", none)
	}
	b, _ := json.Marshal(pts[1])
	var arr []float64
	if err := json.Unmarshal(b, &arr); err != nil || len(arr) != len(history.Fields) {
		t.Fatalf("point JSON %s: %v", b, err)
	}
	if int64(arr[0]) != pts[1].At.UnixMilli() || arr[0] != float64(pts[1].At.Truncate(time.Second).UnixMilli()) || arr[1] != 1 || arr[3] != 3 {
		t.Fatalf("point JSON %s", b)
	}
	if _, err := h.Since(context.Background(), "no{such", 0); err == nil {
		t.Fatal("an invalid room name read")
	}
}

// TestWaits: the longest wait is unknown while nobody waits or nothing was
// recorded, "at least" for users who waited before the history started,
// and counts from the second a later ticket was recorded.
func TestWaits(t *testing.T) {
	q, rdb := queuetest.Queue(t, 1, time.Minute)
	h := history.New(rdb, q, nil)
	ctx := context.Background()
	w := mustWait(t, h)
	if w.Known || w.Waiting != 0 {
		t.Fatalf("empty room: %+v", w)
	}
	mustEnter(t, q, "early")
	if w := mustWait(t, h); w.Known {
		t.Fatalf("before any record: %+v", w)
	}
	mustRecord(t, h)
	if w := mustWait(t, h); !w.Known || !w.AtLeast || w.Waiting != 1 {
		t.Fatalf("a user who waited before the history: %+v", w)
	}
	mustEnter(t, q, "late")
	if w := mustWait(t, h); !w.Known || w.Longest > time.Second {
		t.Fatalf("the early user, just recorded: %+v", w)
	}
	mustRecord(t, h)
	// The early user is admitted (or leaves): the late one is the oldest.
	if _, err := q.Leave(ctx, "r1", "early"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2100 * time.Millisecond)
	mustRecord(t, h)
	w = mustWait(t, h)
	if !w.Known || w.AtLeast || w.Waiting != 1 || w.Longest < 2*time.Second || w.Longest > 4*time.Second {
		t.Fatalf("the late user after about 2 s: %+v", w)
	}
}

func mustWait(tb testing.TB, h *history.History) history.Wait {
	tb.Helper()
	ws, err := h.Waits(context.Background(), []string{"r1"})
	if err != nil {
		tb.Fatal(err)
	}
	return ws[0]
}

// TestRun: the loop records a point every second until stopped, and
// judges the rooms' estimates at its first tick.
func TestRun(t *testing.T) {
	q, rdb := queuetest.Queue(t, 1, time.Minute)
	judged := make(chan string, 10)
	h := history.New(rdb, q, nil).WithJudge(func(room string, e history.ETAError) {
		if e.Count == 0 {
			judged <- room
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		pts, err := h.Since(context.Background(), "r1", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(pts) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d points after 5 s of the loop", len(pts))
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	<-done
	if len(judged) != 1 || <-judged != "r1" {
		t.Fatal("the loop did not judge r1 once (nothing to judge yet) in its first seconds")
	}
}

// TestRecordDeletedRoom: a room deleted between the loop's listing and its
// record gets no history again (the delete removed it): Record says the
// room is gone and writes no key under its tag.
func TestRecordDeletedRoom(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	q := queue.New(rdb, queue.Options{Prefix: prefix})
	ctx := context.Background()
	if err := q.EnsureRoom(ctx, "r1", queue.RoomConfig{Target: 2, EntryTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.DeleteRoom(ctx, "r1", true, "history", "history:meta", "history:tickets"); err != nil {
		t.Fatal(err)
	}
	h := history.New(rdb, q, nil)
	if ok, err := h.Record(ctx, "r1"); ok || !errors.Is(err, queue.ErrRoomNotFound) {
		t.Fatalf("Record of a deleted room = %v, %v; want ErrRoomNotFound", ok, err)
	}
	if keys, err := rdb.Keys(ctx, q.RoomKey("r1", "")+"*").Result(); err != nil || len(keys) != 0 {
		t.Fatalf("keys under the deleted room's tag: %v, %v", keys, err)
	}
}
