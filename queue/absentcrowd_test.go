package queue_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"waitingroom/queue"
	"waitingroom/queue/queuetest"
)

// mustEnterCrowd enters n users named prefix0…prefix<n-1> into room r1 in
// pipelines of 1000 (the bulk enter), in that order.
func mustEnterCrowd(t *testing.T, q *queue.Queue, prefix string, n int) []string {
	t.Helper()
	users := make([]string, n)
	for i := range users {
		users[i] = prefix + strconv.Itoa(i)
	}
	for from := 0; from < n; from += 1000 {
		_, errs, err := q.Enters(context.Background(), "r1", users[from:min(from+1000, n)]...)
		if err != nil {
			t.Fatal(err)
		}
		for i, err := range errs {
			if err != nil {
				t.Fatalf("enter %s: %v", users[from+i], err)
			}
		}
	}
	return users
}

// admitWithin runs admission up to runs times with tokens free slots and
// returns the users admitted and the runs it took to admit anyone.
func admitWithin(t *testing.T, q *queue.Queue, runs, tokens int) ([]string, int, queue.AdmitResult) {
	t.Helper()
	var res queue.AdmitResult
	for run := 1; run <= runs; run++ {
		res = queuetest.Admit(t, q, tokens)
		if len(res.Admitted) > 0 {
			return res.Admitted, run, res
		}
	}
	return nil, runs, res
}

// TestAdmitPastAbsentCrowd: 10,000 absent users at the front do not hold
// up the present user behind them: the first run with a free slot admits
// them (the run looks at each absent user once, within its bound), and
// later runs pass over the same crowd without looking at it again. The
// absent keep their tickets and places, and one seen again is admitted
// next, ahead of everyone behind.
func TestAdmitPastAbsentCrowd(t *testing.T) {
	const crowd = 10_000
	q, rdb := presenceQueue(t, 1, time.Hour)
	ctx := context.Background()
	ghosts := mustEnterCrowd(t, q, "ghost", crowd)
	mustPassRedisTime(t, rdb, 60*time.Millisecond) // every ghost's grace is over
	mustEnter(t, q, "p1")
	mustTouch(t, q, time.Hour, "p1")

	got, runs, res := admitWithin(t, q, 2, 8)
	if !slices.Equal(got, []string{"p1"}) {
		t.Fatalf("after %d runs admitted %v (%+v); want [p1]", runs, got, res)
	}
	if res.Passed != crowd || res.Looked > 8+10_000 {
		t.Fatalf("run %d: passed %d, looked at %d; want %d passed, at most 10,008 looked at", runs, res.Passed, res.Looked, crowd)
	}

	// The room is full: its runs look at the next present user and stop.
	mustEnter(t, q, "p2")
	mustEnter(t, q, "p3")
	mustTouch(t, q, time.Hour, "p2", "p3")
	if res := queuetest.Admit(t, q, 8); len(res.Admitted) != 0 || res.Looked != 0 {
		t.Fatalf("full room: admitted %v, looked at %d; want nobody, nobody", res.Admitted, res.Looked)
	}
	// A slot frees: p2 is admitted at once, the crowd not looked at again.
	if _, err := q.Leave(ctx, "r1", "p1"); err != nil {
		t.Fatal(err)
	}
	res = queuetest.Admit(t, q, 8)
	if !slices.Equal(res.Admitted, []string{"p2"}) || res.Looked != 1 || res.Passed != crowd {
		t.Fatalf("admitted %v, looked at %d, passed %d; want [p2], 1, %d", res.Admitted, res.Looked, res.Passed, crowd)
	}
	mustPositionsHonest(t, q, map[string]int64{ghosts[0]: 1, ghosts[4999]: 5000, ghosts[crowd-1]: crowd, "p3": crowd + 1})

	// A ghost comes back: admitted next, ahead of p3.
	mustTouch(t, q, time.Hour, ghosts[4999])
	if _, err := q.Leave(ctx, "r1", "p2"); err != nil {
		t.Fatal(err)
	}
	res = queuetest.Admit(t, q, 8)
	if !slices.Equal(res.Admitted, []string{ghosts[4999]}) {
		t.Fatalf("admitted %v; want the ghost seen again, %s", res.Admitted, ghosts[4999])
	}
	mustPositionsHonest(t, q, map[string]int64{ghosts[0]: 1, ghosts[5000]: 5000, ghosts[crowd-1]: crowd - 1, "p3": crowd})
}

// TestFullRoomPassesOverAbsentCrowd: while the room is full its runs pass
// over the absent at the front, so when a slot frees, the run that finds
// it admits the first present user whatever the crowd ahead; more absent
// users than one run looks at take one more run each 10,000.
func TestFullRoomPassesOverAbsentCrowd(t *testing.T) {
	const crowd = 15_000
	q, rdb := presenceQueue(t, 1, time.Hour)
	ctx := context.Background()
	mustEnter(t, q, "holder")
	if got := queuetest.Admit(t, q, 8).Admitted; !slices.Equal(got, []string{"holder"}) {
		t.Fatalf("admitted %v; want [holder]", got)
	}
	mustEnterCrowd(t, q, "ghost", crowd)
	mustPassRedisTime(t, rdb, 60*time.Millisecond)
	mustEnter(t, q, "p1")
	mustTouch(t, q, time.Hour, "p1")

	looked := 0
	for run := 1; looked < crowd; run++ {
		res := queuetest.Admit(t, q, 8)
		if len(res.Admitted) != 0 || res.Looked > 10_000 || res.Looked == 0 {
			t.Fatalf("full room, run %d: admitted %v, looked at %d; want nobody, 1 to 10,000", run, res.Admitted, res.Looked)
		}
		looked += res.Looked
		if run > 2 {
			t.Fatalf("%d absent users passed over in %d runs; want %d in 2", looked, run, crowd)
		}
	}
	if looked != crowd {
		t.Fatalf("full room: looked at %d users; want the %d absent, each once", looked, crowd)
	}
	if _, err := q.Leave(ctx, "r1", "holder"); err != nil {
		t.Fatal(err)
	}
	if res := queuetest.Admit(t, q, 8); !slices.Equal(res.Admitted, []string{"p1"}) || res.Looked != 1 {
		t.Fatalf("admitted %v, looked at %d; want [p1], 1", res.Admitted, res.Looked)
	}
}

// TestPassedOverTakenBack: a passed-over user is taken back by a reload
// (entering again) as by a poll, and admitted ahead of those behind; one
// who left, or went absent again, is not taken back.
func TestPassedOverTakenBack(t *testing.T) {
	// An entry's grace of a second: "reloads" must still be present, from
	// entering again to the run after, on a machine however slow (with 50
	// ms it once was not, and "b" went first).
	const grace = time.Second
	q, rdb := presenceQueueGrace(t, 1, time.Hour, grace)
	ctx := context.Background()
	for _, u := range []string{"reloads", "leaves", "again", "a", "b", "c"} {
		mustEnter(t, q, u)
	}
	mustTouch(t, q, time.Hour, "a", "b", "c")
	mustPassRedisTime(t, rdb, grace+10*time.Millisecond)
	if got := queuetest.Admit(t, q, 8).Admitted; !slices.Equal(got, []string{"a"}) {
		t.Fatalf("admitted %v; want [a]", got)
	}
	// All three were passed over. "again" is seen, then absent again
	// (a short grace); "leaves" is seen, then leaves; "reloads" enters again.
	mustTouch(t, q, 20*time.Millisecond, "again")
	mustTouch(t, q, time.Hour, "leaves")
	if _, err := q.Leave(ctx, "r1", "leaves"); err != nil {
		t.Fatal(err)
	}
	mustEnter(t, q, "reloads")
	mustPassRedisTime(t, rdb, 30*time.Millisecond)
	if _, err := q.Leave(ctx, "r1", "a"); err != nil {
		t.Fatal(err)
	}
	if got := queuetest.Admit(t, q, 8).Admitted; !slices.Equal(got, []string{"reloads"}) {
		t.Fatalf("admitted %v; want [reloads], ahead of b", got)
	}
	if _, err := q.Leave(ctx, "r1", "reloads"); err != nil {
		t.Fatal(err)
	}
	if got := queuetest.Admit(t, q, 8).Admitted; !slices.Equal(got, []string{"b"}) {
		t.Fatalf("admitted %v; want [b]: again is absent again, leaves left", got)
	}
	mustPositionsHonest(t, q, map[string]int64{"again": 1, "c": 2})
}
