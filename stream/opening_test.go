package stream_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"waitingroom/queue"
	"waitingroom/stream"
)

func (f *fixture) update(u queue.RoomUpdate) {
	f.t.Helper()
	if _, err := f.q.UpdateRoom(context.Background(), "r1", u, false, queue.RoomConfig{}); err != nil {
		f.t.Fatal(err)
	}
}

// settled reports whether every reader's latest update is state want at
// its user's 1-based ZRANK (or, for PreQueue, simply the state).
func (f *fixture) settled(readers map[string]*reader, want queue.State) bool {
	for u, r := range readers {
		l := r.latest.Load()
		if l == nil || l.Status.State != want {
			return false
		}
		if want != queue.PreQueue && l.Status.Position != f.zrank(u) {
			return false
		}
	}
	return true
}

// TestPushedPositionsAfterOpening: streams held by pre-queue users show
// PREQUEUE; at a random opening they move to WAITING at exactly their new
// ZRANK, as do those who waited before; admissions and departures after
// the opening keep pushed positions = ZRANK; a reject room shows CLOSED at
// the same positions, and WAITING again when it reopens.
func TestPushedPositionsAfterOpening(t *testing.T) {
	f := newFixture(t, stream.Options{Coalesce: everyChange})
	readers := map[string]*reader{}
	for i := range 5 {
		u := "w" + strconv.Itoa(i)
		readers[u] = f.subscribe(u)
	}
	now, err := f.rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	far := now.Add(time.Hour)
	random := queue.MethodRandom
	f.update(queue.RoomUpdate{Method: &random, OpensAt: &far})
	pre := map[string]*reader{}
	for i := range 60 {
		u := "p" + strconv.Itoa(i)
		pre[u] = f.subscribe(u)
		readers[u] = pre[u]
	}
	waitFor(t, "pre-queue streams to show PREQUEUE", func() bool { return f.settled(pre, queue.PreQueue) })
	for _, r := range pre {
		if st := r.latest.Load().Status; st.Position != 0 || st.OpensAt.IsZero() {
			t.Fatalf("random pre-queue status: %+v (want no position, an opening time)", st)
		}
	}

	f.update(queue.RoomUpdate{OpensAt: &time.Time{}})
	res, err := f.q.Open(context.Background(), "r1", queue.NewShuffleSeed())
	if err != nil || res.Moved != 60 {
		t.Fatalf("open: %+v, %v", res, err)
	}
	waitFor(t, "every stream to show WAITING at its ZRANK after the opening", func() bool {
		return f.settled(readers, queue.Waiting)
	})

	for step := range 4 {
		if _, err := f.q.Leave(context.Background(), "r1", "p"+strconv.Itoa(step*7)); err != nil {
			t.Fatal(err)
		}
		delete(readers, "p"+strconv.Itoa(step*7))
		f.setTarget(int64(6 * (step + 1)))
		for _, u := range f.admit() {
			delete(readers, u)
		}
		waitFor(t, fmt.Sprintf("step %d: positions = ZRANK", step), func() bool { return f.settled(readers, queue.Waiting) })
	}

	reject, fifo := queue.MethodReject, queue.MethodFIFO
	f.update(queue.RoomUpdate{Method: &reject})
	waitFor(t, "CLOSED at the same positions", func() bool { return f.settled(readers, queue.Closed) })
	f.update(queue.RoomUpdate{Method: &fifo})
	waitFor(t, "WAITING again", func() bool { return f.settled(readers, queue.Waiting) })
}
