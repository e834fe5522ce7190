package queue_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"waitingroom/queue"
)

// TestSnapshotLeavesOutTheGoneListOnlyWhenHeld: a snapshot read told the
// room's ev, serving and count of departed tickets leaves the list out;
// told anything else (another ev, serving or count, or nothing) it sends
// the list, and the count always.
func TestSnapshotLeavesOutTheGoneListOnlyWhenHeld(t *testing.T) {
	q, _ := mustQueue(t, 1, time.Minute)
	ctx := context.Background()
	var tickets []int64
	for _, u := range []string{"a", "b", "c", "d", "e"} {
		tickets = append(tickets, mustEnter(t, q, u).Ticket)
	}
	mustAdmit(t, q, 1) // a: serving is a's ticket
	for _, u := range []string{"c", "e"} {
		if _, err := q.Leave(ctx, "r1", u); err != nil {
			t.Fatal(err)
		}
	}
	full := mustSnapshot(t, q, queue.GoneHeld{})
	want := []int64{tickets[2], tickets[4]}
	if full.GoneOmitted || !slices.Equal(full.Gone, want) || full.GoneCount != 2 || full.Serving != tickets[0] {
		t.Fatalf("full snapshot = %+v; want gone %v, count 2, serving %d", full, want, tickets[0])
	}
	held := queue.GoneHeld{Known: true, Ev: full.Ev, Serving: full.Serving, Count: 2}
	if sn := mustSnapshot(t, q, held); !sn.GoneOmitted || sn.Gone != nil || sn.GoneCount != 2 || sn.Ev != full.Ev {
		t.Fatalf("snapshot holding the list = %+v; want it left out, count 2", sn)
	}
	for name, h := range map[string]queue.GoneHeld{
		"nothing held":    {Ev: full.Ev, Serving: full.Serving, Count: 2},
		"an earlier ev":   {Known: true, Ev: full.Ev - 1, Serving: full.Serving, Count: 2},
		"another serving": {Known: true, Ev: full.Ev, Serving: full.Serving - 1, Count: 2},
		"another count":   {Known: true, Ev: full.Ev, Serving: full.Serving, Count: 1},
	} {
		if sn := mustSnapshot(t, q, h); sn.GoneOmitted || !slices.Equal(sn.Gone, want) || sn.GoneCount != 2 {
			t.Errorf("%s: snapshot = %+v; want the list %v sent", name, sn, want)
		}
	}
	// A departure moves ev: what was held no longer matches.
	if _, err := q.Leave(ctx, "r1", "b"); err != nil {
		t.Fatal(err)
	}
	want = []int64{tickets[1], tickets[2], tickets[4]}
	if sn := mustSnapshot(t, q, held); sn.GoneOmitted || !slices.Equal(sn.Gone, want) || sn.GoneCount != 3 {
		t.Fatalf("after another departure = %+v; want the list %v sent", sn, want)
	}
}

func mustSnapshot(t *testing.T, q *queue.Queue, held queue.GoneHeld) queue.RoomSnapshot {
	t.Helper()
	snaps, err := q.SnapshotsSince(context.Background(), []string{"r1"}, []queue.GoneHeld{held})
	if err != nil || len(snaps) != 1 {
		t.Fatalf("snapshot: %v, %v", snaps, err)
	}
	return snaps[0]
}
