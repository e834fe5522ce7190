package queue_test

import (
	"fmt"
	"testing"
	"time"

	"waitingroom/queue"
)

// TestAdmitPublishesTheWaitingTotal: enters publish nothing but a room's
// first arrival, so an admission run that admits nobody (the room is full)
// still publishes the new total when it changed — every instance's total
// then trails the newest enter by one tick — and nothing when it did not.
func TestAdmitPublishesTheWaitingTotal(t *testing.T) {
	q, _ := mustQueue(t, 0, time.Minute) // target 0: nobody is admitted
	next, _ := mustSubscribe(t, q)
	must := func(what string) queue.Event {
		t.Helper()
		n, ok := next()
		if !ok || n.Err != nil {
			t.Fatalf("waiting for %s: %+v, %v", what, n, ok)
		}
		return n.Event
	}
	for i := range 20 {
		mustEnter(t, q, fmt.Sprint("u", i))
	}
	if e := must("the first arrival"); e.Waiting != 1 {
		t.Fatalf("first arrival's event: %+v", e)
	}
	mustAdmit(t, q, 8)
	if e := must("the new total"); e.Waiting != 20 || e.Admitted != nil || e.Ev != 2 {
		t.Fatalf("admission run's event: %+v, want the total 20 and nobody admitted", e)
	}
	// Nothing changed: no event. The next one is the total after one more
	// enter.
	mustAdmit(t, q, 8)
	mustEnter(t, q, "late")
	mustAdmit(t, q, 8)
	if e := must("the total after one more"); e.Waiting != 21 || e.Ev != 3 {
		t.Fatalf("event after one more enter: %+v, want the total 21 as event 3 (none in between)", e)
	}
}
