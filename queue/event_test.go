package queue_test

import (
	"context"
	"iter"
	"slices"
	"testing"
	"time"

	"waitingroom/queue"
	"waitingroom/queue/queuetest"
)

// eventChannel is room's channel. Its name is part of the wire contract
// (instances of two versions share it during a rolling deploy), so the test
// spells it out.
func eventChannel(q *queue.Queue, room string) string { return q.RoomKey(room, "events") }

// mustSubscribe starts q.Events and waits for its confirmation; end
// cancels the subscription's context.
func mustSubscribe(t *testing.T, q *queue.Queue) (next func() (queue.Notice, bool), end func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	next, stop := iter.Pull(q.Events(ctx))
	t.Cleanup(func() { cancel(); stop() })
	n, ok := next()
	if !ok || !n.Subscribed || n.Pattern != q.EventPattern() {
		t.Fatalf("first notice = %+v, %v; want Subscribed on every room's channel", n, ok)
	}
	return next, cancel
}

// TestEventsWire: the payloads the scripts publish, as cjson writes them
// (and as an instance of the previous version publishes them), come out of
// Events typed; a message that is not an event comes out as an error, and
// the subscription goes on.
func TestEventsWire(t *testing.T) {
	q, rdb := mustQueue(t, 0, time.Minute)
	next, _ := mustSubscribe(t, q)
	publish := func(payload string) queue.Notice {
		t.Helper()
		if err := rdb.Publish(context.Background(), eventChannel(q, "r1"), payload).Err(); err != nil {
			t.Fatal(err)
		}
		n, ok := next()
		if !ok {
			t.Fatalf("subscription ended after %s", payload)
		}
		return n
	}
	rate, closed := 12.5, true
	for _, tt := range []struct {
		name, payload string
		want          queue.Event
	}{
		{"admit", `{"room":"r1","ts":1700000000123,"waiting":7,"active":3,"rate":"12.5","pruned":0,"ev":41,"serving":12,"admitted":["a","b"]}`,
			queue.Event{Kind: queue.EventQueue, Room: "r1", Ev: 41, At: time.UnixMilli(1700000000123), Serving: 12, Waiting: 7, Admitted: []string{"a", "b"}, Rate: &rate}},
		{"admit dropping idle users", `{"room":"r1","ts":5,"waiting":1,"active":0,"rate":"12.5","pruned":1,"ev":2,"serving":3,"left":[5,9]}`,
			queue.Event{Room: "r1", Ev: 2, At: time.UnixMilli(5), Serving: 3, Waiting: 1, Left: []int64{5, 9}, Rate: &rate}},
		{"leave", `{"room":"r1","ev":42,"ts":6,"left":[15],"waiting":6,"serving":12}`,
			queue.Event{Room: "r1", Ev: 42, At: time.UnixMilli(6), Serving: 12, Waiting: 6, Left: []int64{15}}},
		{"open", `{"room":"r1","kind":"open","ts":7,"ev":43,"sched":2,"waiting":40,"opened":40,"serving":12}`,
			queue.Event{Kind: queue.EventOpen, Room: "r1", Ev: 43, At: time.UnixMilli(7), Serving: 12, Waiting: 40, Sched: 2}},
		{"config", `{"room":"r1","kind":"config","ts":8,"ev":44,"sched":3,"closed":true,"waiting":40,"serving":12}`,
			queue.Event{Kind: queue.EventConfig, Room: "r1", Ev: 44, At: time.UnixMilli(8), Serving: 12, Waiting: 40, Sched: 3, Closed: &closed}},
		{"a field of a later version is ignored", `{"room":"r1","ev":1,"ts":9,"waiting":0,"serving":0,"future":{"x":1}}`,
			queue.Event{Room: "r1", Ev: 1, At: time.UnixMilli(9)}},
	} {
		n := publish(tt.payload)
		if n.Err != nil || n.Subscribed || !sameEvent(n.Event, tt.want) {
			t.Errorf("%s: notice = %+v, want event %+v", tt.name, n, tt.want)
		}
	}
	for _, bad := range []string{``, `not json`, `[]`, `{"ev":1}`, `{"room":""}`, `{"room":"r1","rate":"fast"}`, `{"room":"r1","ev":"one"}`} {
		if n := publish(bad); n.Err == nil {
			t.Errorf("payload %q: notice %+v, want an error", bad, n)
		}
	}
}

func sameEvent(a, b queue.Event) bool {
	eq := func(x, y *float64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	eqb := func(x, y *bool) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.Kind == b.Kind && a.Room == b.Room && a.Ev == b.Ev && a.At.Equal(b.At) && a.Serving == b.Serving &&
		a.Waiting == b.Waiting && slices.Equal(a.Admitted, b.Admitted) && slices.Equal(a.Left, b.Left) &&
		eq(a.Rate, b.Rate) && a.Sched == b.Sched && eqb(a.Closed, b.Closed)
}

// TestEventsTyped: one subscription yields its confirmation, then the
// events of admit, leave and a method change, typed, numbered one after
// the other, each waking the room but the admission's; it ends with its
// context.
func TestEventsTyped(t *testing.T) {
	q, _ := mustQueue(t, 2, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	next, end := mustSubscribe(t, q)
	must := func(what string) queue.Notice {
		t.Helper()
		n, ok := next()
		if !ok {
			t.Fatalf("subscription ended waiting for %s", what)
		}
		if n.Err != nil {
			t.Fatalf("waiting for %s: %v", what, n.Err)
		}
		return n
	}
	for _, u := range []string{"a", "b", "c", "d"} {
		mustEnter(t, q, u)
	}
	// The first arrival in an empty queue wakes the room: one event, the
	// later enters none.
	first := must("the first arrival").Event
	if first.Kind != queue.EventQueue || first.Room != "r1" || first.Ev != 1 || first.Waiting != 1 || first.Admitted != nil || first.Rate != nil {
		t.Fatalf("first arrival's event = %+v", first)
	}
	mustAdmit(t, q, 8)
	admit := must("the admission").Event
	if admit.Ev != first.Ev+1 {
		t.Fatalf("admission ev %d after the first arrival's %d", admit.Ev, first.Ev)
	}
	if admit.Kind != queue.EventQueue || admit.Room != "r1" || !slices.Equal(admit.Admitted, []string{"a", "b"}) ||
		admit.Serving != 2 || admit.Waiting != 2 || admit.Rate == nil || admit.At.IsZero() {
		t.Fatalf("admission event = %+v", admit)
	}
	if _, err := q.Leave(ctx, "r1", "d"); err != nil {
		t.Fatal(err)
	}
	leave := must("the departure").Event
	if leave.Kind != queue.EventQueue || !slices.Equal(leave.Left, []int64{4}) || leave.Waiting != 1 || leave.Ev != admit.Ev+1 || leave.Rate != nil {
		t.Fatalf("departure event = %+v (admission ev %d)", leave, admit.Ev)
	}
	reject := queue.MethodReject
	queuetest.Update(t, q, "r1", queue.RoomUpdate{Method: &reject})
	cfg := must("the method change").Event
	if cfg.Kind != queue.EventConfig || cfg.Closed == nil || !*cfg.Closed || cfg.Sched < 1 || cfg.Ev != leave.Ev+1 {
		t.Fatalf("config event = %+v", cfg)
	}
	// Every one of them wakes the room's admission but the admission's
	// own.
	for _, e := range []queue.Event{first, admit, leave, cfg} {
		if want := e.Ev != admit.Ev; e.Wakes() != want {
			t.Fatalf("event %d: Wakes %v, want %v", e.Ev, e.Wakes(), want)
		}
	}
	end()
	if n, ok := next(); ok {
		t.Fatalf("after the context ended: %+v", n)
	}
}

// TestGrantFromTheQueueIsADeparture: a user admitted by the bypass leaves
// the queue like a departure — one event with their ticket in left, the
// ticket in the snapshot's gone set — so the places behind move up on every
// instance at once; a grant to someone not waiting publishes nothing.
func TestGrantFromTheQueueIsADeparture(t *testing.T) {
	q, _ := mustQueue(t, 0, time.Minute)
	ctx := context.Background()
	a, b := mustEnter(t, q, "a"), mustEnter(t, q, "b")
	next, _ := mustSubscribe(t, q)
	if _, err := q.Grant(ctx, "r1", "a"); err != nil {
		t.Fatal(err)
	}
	n, ok := next()
	if !ok || n.Err != nil || !slices.Equal(n.Event.Left, []int64{a.Ticket}) || n.Event.Waiting != 1 {
		t.Fatalf("event = %+v, %v; want a's ticket %d left, 1 waiting", n, ok, a.Ticket)
	}
	snaps, err := q.Snapshots(ctx, []string{"r1"})
	if err != nil || !slices.Equal(snaps[0].Gone, []int64{a.Ticket}) || snaps[0].Departed != 0 {
		t.Fatalf("snapshot = %+v, %v; want a's ticket gone, nobody counted as left", snaps, err)
	}
	if st, err := q.Status(ctx, "r1", "b"); err != nil || st.Position != 1 || st.Ticket != b.Ticket {
		t.Fatalf("b after the grant = %+v, %v; want position 1", st, err)
	}
	if _, err := q.Grant(ctx, "r1", "c"); err != nil { // never waited: no event
		t.Fatal(err)
	}
	mustEnter(t, q, "d") // a later event must be the next one seen
	if _, err := q.Leave(ctx, "r1", "d"); err != nil {
		t.Fatal(err)
	}
	if n, ok := next(); !ok || n.Err != nil || len(n.Event.Left) != 1 || n.Event.Left[0] == a.Ticket {
		t.Fatalf("next event = %+v, %v; want d's departure (the grant to c published nothing)", n, ok)
	}
}
