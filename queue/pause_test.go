package queue_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"waitingroom/queue"
)

// setPaused pauses or resumes room of q.
func setPaused(t *testing.T, q *queue.Queue, room string, paused bool) {
	t.Helper()
	if _, err := q.UpdateRoom(context.Background(), room, queue.RoomUpdate{Paused: &paused}, false, queue.RoomConfig{}); err != nil {
		t.Fatal(err)
	}
}

// checkPausedArrival: st is a new WAITING place at position pos in a
// paused room.
func checkPausedArrival(t *testing.T, who string, st queue.Status, err error, pos int64) {
	t.Helper()
	if err != nil || st.State != queue.Waiting || !st.New || !st.Paused || st.Position != pos || st.Ticket == 0 {
		t.Fatalf("%s entering a paused room = %+v, %v; want a new WAITING place at %d, paused", who, st, err, pos)
	}
}

// TestPausedRoomTakesArrivals: a paused room takes new arrivals into the
// line behind those already waiting, tells them it is paused, admits
// nobody however many runs go by, and once resumed admits everyone in
// ticket order, those who came during the pause included.
func TestPausedRoomTakesArrivals(t *testing.T) {
	q, _ := mustQueue(t, 5, time.Minute)
	ctx := context.Background()
	mustEnter(t, q, "alice")
	setPaused(t, q, "r1", true)

	bob, err := q.Enter(ctx, "r1", "bob")
	checkPausedArrival(t, "bob", bob, err, 2)
	carol, err := q.Enter(ctx, "r1", "carol")
	checkPausedArrival(t, "carol", carol, err, 3)
	if !(bob.Ticket < carol.Ticket) {
		t.Fatalf("tickets bob %d, carol %d: want them in arrival order", bob.Ticket, carol.Ticket)
	}
	if st, err := q.Status(ctx, "r1", "bob"); err != nil || st.State != queue.Waiting || !st.Paused || st.Position != 2 {
		t.Fatalf("bob's status while paused = %+v, %v; want WAITING at 2, paused", st, err)
	}
	if st := mustEnter(t, q, "bob"); st.New || st.Position != 2 || st.Ticket != bob.Ticket {
		t.Fatalf("bob entering again = %+v, want his place kept", st)
	}
	// Bulk enters follow the same script.
	sts, errs, err := q.Enters(ctx, "r1", "dave")
	if err != nil {
		t.Fatal(err)
	}
	checkPausedArrival(t, "dave (Enters)", sts[0], errs[0], 4)

	for run := range 3 {
		if res := mustAdmit(t, q, 8); len(res.Admitted) != 0 || !res.Paused || res.Waiting != 4 {
			t.Fatalf("run %d of the paused room = %+v, want nobody admitted, 4 waiting", run, res)
		}
	}
	setPaused(t, q, "r1", false)
	if st, err := q.Status(ctx, "r1", "carol"); err != nil || st.Paused {
		t.Fatalf("carol's status after resuming = %+v, %v; want not paused", st, err)
	}
	if res := mustAdmit(t, q, 8); !slices.Equal(res.Admitted, []string{"alice", "bob", "carol", "dave"}) {
		t.Fatalf("the resumed room admitted %v, want alice, bob, carol, dave", res.Admitted)
	}
	if st, err := q.Status(ctx, "r1", "dave"); err != nil || st.State != queue.Ready {
		t.Fatalf("dave after resuming = %+v, %v; want READY", st, err)
	}
}

// TestRejectRefusesArrivalsPausedOrNot: method reject is the state that
// refuses arrivals (ErrRoomClosed), with or without a pause; the users
// already waiting keep their place and see it closed.
func TestRejectRefusesArrivalsPausedOrNot(t *testing.T) {
	q, _ := mustQueue(t, 5, time.Minute)
	ctx := context.Background()
	mustEnter(t, q, "alice")
	reject := queue.MethodReject
	if _, err := q.UpdateRoom(ctx, "r1", queue.RoomUpdate{Method: &reject}, false, queue.RoomConfig{}); err != nil {
		t.Fatal(err)
	}
	for _, paused := range []bool{false, true} {
		setPaused(t, q, "r1", paused)
		if _, err := q.Enter(ctx, "r1", "bob"); !errors.Is(err, queue.ErrRoomClosed) {
			t.Fatalf("a newcomer to a closed room (paused %v): %v, want ErrRoomClosed", paused, err)
		}
		if st := mustEnter(t, q, "alice"); st.State != queue.Closed || st.Position != 1 || st.Paused != paused {
			t.Fatalf("alice in the closed room (paused %v) = %+v, want CLOSED at 1", paused, st)
		}
	}
}

// TestPausedPassthroughQueues: a paused passthrough room admits nobody at
// enter either: the arrival waits, and the first run after the pause
// admits everyone waiting.
func TestPausedPassthroughQueues(t *testing.T) {
	q, _ := mustQueue(t, 1, time.Minute)
	ctx := context.Background()
	pass := queue.MethodPassthrough
	if _, err := q.UpdateRoom(ctx, "r1", queue.RoomUpdate{Method: &pass}, false, queue.RoomConfig{}); err != nil {
		t.Fatal(err)
	}
	setPaused(t, q, "r1", true)
	a, err := q.Enter(ctx, "r1", "alice")
	checkPausedArrival(t, "alice", a, err, 1)
	b, err := q.Enter(ctx, "r1", "bob")
	checkPausedArrival(t, "bob", b, err, 2)
	if res := mustAdmit(t, q, 8); len(res.Admitted) != 0 {
		t.Fatalf("the paused passthrough room admitted %v", res.Admitted)
	}
	setPaused(t, q, "r1", false)
	if res := mustAdmit(t, q, 8); !slices.Equal(res.Admitted, []string{"alice", "bob"}) {
		t.Fatalf("the resumed passthrough room admitted %v, want alice, bob", res.Admitted)
	}
	if st, err := q.Enter(ctx, "r1", "carol"); err != nil || st.State != queue.Ready {
		t.Fatalf("carol in the running passthrough room = %+v, %v; want READY at once", st, err)
	}
}

// TestPausedShardedRoomTakesArrivals: a room with a sharded pre-queue
// (prequeueParts 3) takes arrivals into its parts while paused, opens
// while paused without admitting anyone, takes arrivals after its opening
// into the line behind the pre-queue, and admits in that order once
// resumed.
func TestPausedShardedRoomTakesArrivals(t *testing.T) {
	e := singleRedis(t)
	ctx := context.Background()
	q := e.queue(5)
	e.room(t, q, "r", 3, queue.MethodFIFO, 20)
	setPaused(t, q, "r", true)
	early := users("e", 9)
	for _, u := range early {
		st, err := q.Enter(ctx, "r", u)
		if err != nil || st.State != queue.PreQueue || !st.New || !st.Paused {
			t.Fatalf("%s before the opening of the paused room = %+v, %v; want a new PREQUEUE place, paused", u, st, err)
		}
	}
	if got := e.inParts(t, "r", 3); len(got) != len(early) {
		t.Fatalf("the parts hold %v, want the %d early arrivals", got, len(early))
	}
	if st, err := q.Status(ctx, "r", early[0]); err != nil || st.State != queue.PreQueue || !st.Paused {
		t.Fatalf("%s's status = %+v, %v; want PREQUEUE, paused", early[0], st, err)
	}

	e.openNow(t, q, "r")
	mergeAll(t, q, "r")
	if got, _ := e.order(t, "r"); !slices.Equal(got, early) {
		t.Fatalf("after the opening the line is %v, want the arrivals' order %v", got, early)
	}
	late, err := q.Enter(ctx, "r", "late")
	checkPausedArrival(t, "late, after the opening", late, err, int64(len(early)+1))
	for run := range 3 {
		if res, err := q.Admit(ctx, "r", 30); err != nil || len(res.Admitted) != 0 {
			t.Fatalf("run %d of the paused, opened room = %+v, %v; want nobody admitted", run, res, err)
		}
	}
	setPaused(t, q, "r", false)
	res, err := q.Admit(ctx, "r", 30)
	if want := append(slices.Clone(early), "late"); err != nil || !slices.Equal(res.Admitted, want) {
		t.Fatalf("the resumed room admitted %v (%v), want %v", res.Admitted, err, want)
	}
}
