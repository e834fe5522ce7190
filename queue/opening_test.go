package queue_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"waitingroom/queue"
	"waitingroom/queue/queuetest"
)

// TestOpeningInSlices: a random opening far larger than one run of the
// open script (slice 7 and 8 runs per call here, so 100 users take 15
// shuffle runs and 15 move runs over several Open calls, two of them
// concurrent). While it is under
// way the room admits nobody, newcomers join the pre-queue behind, a user
// already moved is waiting at the right place, and a later call's seed is
// ignored. At the end: the shuffled users in Shuffle(seed) order, then every
// late arrival in arrival order, contiguous tickets, one open event, and
// exactly one call reporting the opening with everyone it moved.
func TestOpeningInSlices(t *testing.T) {
	q, rdb := mustQueue(t, 50, time.Minute)
	queue.SetOpenSlice(q, 7, 8)
	prefix := prefixOf(t, q, rdb)
	ctx := context.Background()
	far := queuetest.RedisNow(t, rdb).Add(time.Hour)
	queuetest.Update(t, q, "r1", queue.RoomUpdate{Method: ptr(queue.MethodRandom), OpensAt: &far})
	const n = 100
	early := make([]string, n)
	for i := range early {
		early[i] = "e" + strconv.Itoa(i)
		mustEnter(t, q, early[i])
	}
	past := queuetest.RedisNow(t, rdb).Add(-time.Second)
	queuetest.Update(t, q, "r1", queue.RoomUpdate{OpensAt: &past})
	ps := rdb.Subscribe(ctx, eventChannel(q, "r1"))
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}

	seed := queue.NewShuffleSeed()
	// 8 runs: all of them shuffle; nobody is moved yet.
	if res, err := q.Open(ctx, "r1", seed); err != nil || res.Done || res.Moved != 0 {
		t.Fatalf("first call: %+v, %v (want not done, nothing reported)", res, err)
	}
	late := []string{"l0"}
	if st := mustEnter(t, q, "l0"); st.State != queue.PreQueue {
		t.Fatalf("arrival while shuffling: %+v", st)
	}
	// 7 more shuffle runs, then the first move: the recorded seed holds.
	if res, err := q.Open(ctx, "r1", queue.NewShuffleSeed()); err != nil || res.Done || res.Moved != 0 {
		t.Fatalf("second call: %+v, %v", res, err)
	}
	order := queue.Shuffle(seed, early)
	if users, tickets := queuetest.Order(t, rdb, prefix, "r1"); !slices.Equal(users, order[:7]) || !slices.Equal(tickets, []int64{1, 2, 3, 4, 5, 6, 7}) {
		t.Fatalf("after the first move: %v %v, want %v with tickets 1..7", users, tickets, order[:7])
	}
	if adm, err := q.Admit(ctx, "r1", 50); err != nil || len(adm.Admitted) != 0 || !adm.Due {
		t.Fatalf("admission while opening: %+v, %v (want nobody, due)", adm, err)
	}
	if st, err := q.Status(ctx, "r1", order[3]); err != nil || st.State != queue.Waiting || st.Position != 4 || st.Ticket != 4 {
		t.Fatalf("a moved user while opening: %+v, %v", st, err)
	}
	if st, err := q.Status(ctx, "r1", order[50]); err != nil || st.State != queue.PreQueue || st.Waiting != n+1 {
		t.Fatalf("a user still in the pre-queue: %+v, %v", st, err)
	}

	// Two instances finish it while newcomers keep arriving.
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		reports []queue.OpenResult
	)
	for range 2 {
		wg.Go(func() {
			for {
				res, err := q.Open(ctx, "r1", queue.NewShuffleSeed())
				if err != nil {
					t.Error(err)
					return
				}
				if res.Done {
					mu.Lock()
					reports = append(reports, res)
					mu.Unlock()
					return
				}
			}
		})
	}
	prequeued := 1 // l0
	for i := 1; i <= 20; i++ {
		u := "l" + strconv.Itoa(i)
		late = append(late, u)
		if st := mustEnter(t, q, u); st.State == queue.PreQueue {
			prequeued++
		} else if st.State != queue.Waiting {
			t.Fatalf("arrival during the opening: %+v", st)
		}
	}
	wg.Wait()
	if info, err := q.Room(ctx, "r1"); err != nil || info.PreQueue != 0 {
		t.Fatalf("after: %+v, %v", info, err)
	}

	opened := 0
	for _, r := range reports {
		if r.Moved > 0 {
			opened++
			if r.Seed != seed || r.Shuffled != n || r.Moved < n+prequeued {
				t.Errorf("the opening's report: %+v (seed %s, want %d shuffled, at least %d moved)", r, seed, n, n+prequeued)
			}
		}
	}
	if opened != 1 {
		t.Fatalf("%d calls reported the opening (%+v), want 1", opened, reports)
	}
	users, tickets := queuetest.Order(t, rdb, prefix, "r1")
	if want := append(slices.Clone(order), late...); !slices.Equal(users, want) {
		t.Fatalf("queue after the opening:\n%v\nwant\n%v", users, want)
	}
	for i, tk := range tickets {
		if tk != int64(i+1) {
			t.Fatalf("tickets %v are not 1..%d", tickets, len(tickets))
		}
	}
	if info, _ := q.Room(ctx, "r1"); info.ShuffleSeed != seed || info.Shuffled != n {
		t.Fatalf("recorded: seed %q shuffled %d", info.ShuffleSeed, info.Shuffled)
	}
	if opens := queuetest.OpenEvents(ctx, ps); opens != 1 {
		t.Fatalf("open events = %d, want 1", opens)
	}
}
