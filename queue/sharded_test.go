package queue_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue"
	"waitingroom/queue/admission"
	"waitingroom/queue/queuetest"
)

// The sharded pre-queue (prequeue*.go) is tested on one Redis and on
// a 3-master Redis Cluster, by the same functions: each takes a client and
// a key prefix of its own.

type shardedEnv struct {
	rdb    redis.UniversalClient
	prefix string
}

func singleRedis(t *testing.T) shardedEnv {
	rdb, prefix := queuetest.Redis(t)
	return shardedEnv{rdb, prefix}
}

// queue returns a new Queue (an instance) on the env, opening slices of
// slice users, 1000 runs per Open or Merge call.
func (e shardedEnv) queue(slice int) *queue.Queue {
	q := queue.New(e.rdb, queue.Options{Prefix: e.prefix})
	queue.SetOpenSlice(q, slice, 1000)
	return q
}

func (e shardedEnv) now(t *testing.T) time.Time {
	t.Helper()
	now, err := e.rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now
}

// room creates room with parts parts, method m, target, opening in an hour.
func (e shardedEnv) room(t *testing.T, q *queue.Queue, room string, parts int, m queue.Method, target int64) {
	t.Helper()
	at := e.now(t).Add(time.Hour)
	_, err := q.UpdateRoom(context.Background(), room, queue.RoomUpdate{Method: &m, OpensAt: &at, PrequeueParts: &parts},
		true, queue.RoomConfig{Target: target, EntryTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
}

// openNow moves room's opening time into the past.
func (e shardedEnv) openNow(t *testing.T, q *queue.Queue, room string) {
	t.Helper()
	past := e.now(t).Add(-time.Second)
	if _, err := q.UpdateRoom(context.Background(), room, queue.RoomUpdate{OpensAt: &past}, false, queue.RoomConfig{}); err != nil {
		t.Fatal(err)
	}
}

// order is room's queue: users and tickets, in ticket order.
func (e shardedEnv) order(t *testing.T, room string) ([]string, []int64) {
	t.Helper()
	zs, err := e.rdb.ZRangeWithScores(context.Background(), e.prefix+"{"+room+"}:queue", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	users := make([]string, len(zs))
	tickets := make([]int64, len(zs))
	for i, z := range zs {
		users[i], tickets[i] = z.Member.(string), int64(z.Score)
	}
	return users, tickets
}

// inParts is every user held by room's parts 0 … parts−1.
func (e shardedEnv) inParts(t *testing.T, room string, parts int) []string {
	t.Helper()
	var out []string
	for p := range parts {
		us, err := e.rdb.ZRange(context.Background(), fmt.Sprintf("%s{%s~%d}:prequeue", e.prefix, room, p), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, us...)
	}
	return out
}

// enterAll enters users into room, each PREQUEUE and new.
func enterAll(t *testing.T, q *queue.Queue, room string, users []string) {
	t.Helper()
	for _, u := range users {
		st, err := q.Enter(context.Background(), room, u)
		if err != nil || st.State != queue.PreQueue || !st.New || st.Position != 0 {
			t.Fatalf("enter %s before the opening: %+v, %v (want a new PREQUEUE without position)", u, st, err)
		}
	}
}

// mergeAll runs q's Merge until the opening is done and returns the call
// that finished it.
func mergeAll(t *testing.T, q *queue.Queue, room string) queue.OpenResult {
	t.Helper()
	for range 10000 {
		res, err := q.Merge(context.Background(), room, queue.NewShuffleSeed())
		if err != nil {
			t.Fatal(err)
		}
		if res.Done {
			return res
		}
	}
	t.Fatal("the merge never finished")
	return queue.OpenResult{}
}

func users(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

func contiguous(t *testing.T, tickets []int64) {
	t.Helper()
	for i, tk := range tickets {
		if tk != int64(i+1) {
			t.Fatalf("tickets %v are not 1..%d", tickets, len(tickets))
		}
	}
}

// shardedEnterStatus: before the opening each user lands in their part
// (PartOf) and nowhere else, entering again keeps the place, a status
// read says PREQUEUE with the room's whole count, the room's figures sum
// the parts, a user who leaves is gone, and prequeueParts cannot change
// while anyone is pre-queued.
func shardedEnterStatus(t *testing.T, e shardedEnv) {
	ctx := context.Background()
	q := e.queue(1000)
	e.room(t, q, "hot", 3, queue.MethodRandom, 0)
	us := users("u", 30)
	enterAll(t, q, "hot", us)
	other := e.queue(1000) // a second instance, which has heard nothing yet
	for _, u := range us {
		st, err := other.Enter(ctx, "hot", u)
		if err != nil || st.State != queue.PreQueue || st.New {
			t.Fatalf("enter %s again: %+v, %v (want PREQUEUE, not new)", u, st, err)
		}
		st, err = other.Status(ctx, "hot", u)
		if err != nil || st.State != queue.PreQueue || st.Waiting != 30 || st.OpensAt.IsZero() {
			t.Fatalf("status of %s: %+v, %v (want PREQUEUE, waiting 30, an opening)", u, st, err)
		}
	}
	for p := range 3 {
		held, err := e.rdb.ZRange(ctx, fmt.Sprintf("%s{hot~%d}:prequeue", e.prefix, p), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(held) == 0 {
			t.Fatalf("part %d holds nobody", p)
		}
		for _, u := range held {
			if queue.PartOf(u, 3) != p {
				t.Fatalf("%s is in part %d, PartOf says %d", u, p, queue.PartOf(u, 3))
			}
		}
	}
	if n := e.rdb.ZCard(ctx, e.prefix+"{hot}:prequeue").Val(); n != 0 {
		t.Fatalf("the room's own pre-queue holds %d", n)
	}
	info, err := q.Room(ctx, "hot")
	if err != nil || info.PreQueue != 30 || info.PrequeueParts != 3 {
		t.Fatalf("room: %+v, %v (want 30 pre-queued in 3 parts)", info, err)
	}
	sts, errs, err := other.Statuses(ctx, "hot", []string{"u1", "nobody"})
	if err != nil || errs[0] != nil || sts[0].State != queue.PreQueue || !errors.Is(errs[1], queue.ErrNotInQueue) {
		t.Fatalf("statuses: %+v %v %v", sts, errs, err)
	}
	if res, err := other.Leave(ctx, "hot", "u1"); err != nil || !res.WasWaiting {
		t.Fatalf("leave: %+v, %v", res, err)
	}
	if _, err := q.Status(ctx, "hot", "u1"); !errors.Is(err, queue.ErrNotInQueue) {
		t.Fatalf("status after leaving: %v, want not in queue", err)
	}
	two := 2
	if _, err := q.UpdateRoom(ctx, "hot", queue.RoomUpdate{PrequeueParts: &two}, false, queue.RoomConfig{}); !errors.Is(err, queue.ErrPrequeueNotEmpty) {
		t.Fatalf("changing prequeueParts with 29 pre-queued: %v, want ErrPrequeueNotEmpty", err)
	}
	// An empty room may change it, and its arrivals follow.
	e.room(t, q, "cold", 3, queue.MethodFIFO, 0)
	if _, err := q.UpdateRoom(ctx, "cold", queue.RoomUpdate{PrequeueParts: &two}, false, queue.RoomConfig{}); err != nil {
		t.Fatal(err)
	}
	enterAll(t, q, "cold", []string{"a", "b", "c", "d"})
	if got := e.inParts(t, "cold", 3); len(got) != 4 {
		t.Fatalf("parts of cold hold %v", got)
	}
	if got := e.inParts(t, "cold", 2); len(got) != 4 {
		t.Fatalf("parts 0-1 of cold hold %v: the third must take nobody", got)
	}
}

func TestShardedEnterStatus(t *testing.T) { shardedEnterStatus(t, singleRedis(t)) }

// chiSquarePositions checks counts[user][position] against uniform.
func chiSquarePositions(t *testing.T, counts [][]int, runs int, critical float64) float64 {
	t.Helper()
	worst := 0.0
	for u, c := range counts {
		x := chiSquare(c, runs)
		worst = max(worst, x)
		if x > critical {
			t.Errorf("user %d: positions %v, chi-square %.1f > %.2f", u, c, x, critical)
		}
	}
	return worst
}

// shardedFairness: runs random openings of 10 users in 3 parts, opened by
// slices of 4: every result is ShuffleParts of its recorded seed, tickets
// are contiguous, and the positions of every user pass a chi-square test
// against uniform (9 degrees of freedom, α = 0.0001 per user, critical
// 33.72). The same test rejects the parts one after another (each
// shuffled, not interleaved).
func shardedFairness(t *testing.T, e shardedEnv, runs int) {
	ctx := context.Background()
	q := e.queue(4)
	const n = 10
	us := users("u", n)
	counts := make([][]int, n)
	concat := make([][]int, n) // the parts one after another
	for i := range counts {
		counts[i], concat[i] = make([]int, n), make([]int, n)
	}
	for run := range runs {
		room := "s" + strconv.Itoa(run)
		e.room(t, q, room, 3, queue.MethodRandom, 0)
		enterAll(t, q, room, us)
		e.openNow(t, q, room)
		res := mergeAll(t, q, room)
		if res.Moved != n || res.Shuffled != n || res.Seed == "" {
			t.Fatalf("run %d: opening %+v", run, res)
		}
		got, tickets := e.order(t, room)
		contiguous(t, tickets)
		if want := queue.ShuffleParts(res.Seed, 3, us); !slices.Equal(got, want) {
			t.Fatalf("run %d: queue %v, ShuffleParts(seed) %v", run, got, want)
		}
		if left := e.inParts(t, room, 3); len(left) != 0 {
			t.Fatalf("run %d: parts still hold %v", run, left)
		}
		info, err := q.Room(ctx, room)
		if err != nil || info.ShuffleSeed != res.Seed || info.ShuffleParts != 3 || info.PreQueue != 0 || info.Waiting != n || info.Entered != n {
			t.Fatalf("run %d: room after the opening %+v, %v", run, info, err)
		}
		for pos, u := range got {
			idx, _ := strconv.Atoi(u[1:])
			counts[idx][pos]++
		}
		var cat []string
		for p := range 3 {
			var part []string
			for _, u := range us {
				if queue.PartOf(u, 3) == p {
					part = append(part, u)
				}
			}
			cat = append(cat, queue.Shuffle(queue.PartSeed(res.Seed, p), part)...)
		}
		for pos, u := range cat {
			idx, _ := strconv.Atoi(u[1:])
			concat[idx][pos]++
		}
	}
	const critical = 33.72
	worst := chiSquarePositions(t, counts, runs, critical)
	t.Logf("%d sharded openings of %d users in 3 parts: largest per-user chi-square %.1f (critical %.2f)", runs, n, worst, critical)
	rejected := false
	for _, c := range concat {
		rejected = rejected || chiSquare(c, runs) > critical
	}
	if !rejected {
		t.Fatal("the check accepts the parts one after another, not interleaved")
	}
}

func TestShardedOpeningIsFairAndReproducible(t *testing.T) { shardedFairness(t, singleRedis(t), 400) }

// shardedCrashes: two instances open a sharded pre-queue of 60 users in
// slices of 7, each step cut short by turns — after the seal, after a
// take, after an append (before its commit) — as instances that die
// there, and finished by the other. After every step nobody is lost
// (each user is in the queue or a part) or twice in the queue; at the end
// the queue is ShuffleParts of the recorded seed with tickets 1..60, the
// parts are empty and one call reported the opening.
func shardedCrashes(t *testing.T, e shardedEnv) {
	ctx := context.Background()
	a, b := e.queue(7), e.queue(7)
	e.room(t, a, "r", 3, queue.MethodRandom, 0)
	us := users("u", 60)
	enterAll(t, a, "r", us)
	e.openNow(t, a, "r")
	stops := []int{queue.StopAfterSeal, queue.StopAfterTake, -1, queue.StopAfterAppend, -1}
	var reports []queue.OpenResult
	for step := 0; ; step++ {
		if step > 500 {
			t.Fatal("the opening never finished")
		}
		inst := []*queue.Queue{a, b}[step%2]
		res, err := queue.MergeStep(inst, "r", queue.NewShuffleSeed(), stops[step%len(stops)])
		if err != nil {
			t.Fatal(err)
		}
		queued, _ := e.order(t, "r")
		seen := map[string]bool{}
		for _, u := range append(queued, e.inParts(t, "r", 3)...) {
			seen[u] = true
		}
		for _, u := range us {
			if !seen[u] {
				t.Fatalf("step %d: %s is neither in the queue nor in a part", step, u)
			}
		}
		if len(seen) != len(us) {
			t.Fatalf("step %d: %d users held, want %d", step, len(seen), len(us))
		}
		if res.Moved > 0 {
			reports = append(reports, res)
		}
		if res.Done && len(e.inParts(t, "r", 3)) == 0 {
			if info, _ := a.Room(ctx, "r"); info.ShuffleSeed != "" {
				break
			}
		}
	}
	if len(reports) != 1 || reports[0].Moved != 60 {
		t.Fatalf("opening reports %+v, want one with 60 moved", reports)
	}
	got, tickets := e.order(t, "r")
	contiguous(t, tickets)
	if want := queue.ShuffleParts(reports[0].Seed, 3, us); !slices.Equal(got, want) {
		t.Fatalf("queue %v\nShuffleParts(seed) %v", got, want)
	}
	if n := e.rdb.Exists(ctx, e.prefix+"{r}:merge").Val(); n != 0 {
		t.Fatal("the merge record outlived the opening")
	}
	// Once opened, arrivals go to the room's queue.
	if st, err := b.Enter(ctx, "r", "late"); err != nil || st.State != queue.Waiting || st.Ticket != 61 {
		t.Fatalf("an arrival after the opening: %+v, %v (want WAITING with ticket 61)", st, err)
	}
}

func TestShardedOpeningSurvivesCrashes(t *testing.T) { shardedCrashes(t, singleRedis(t)) }

// shardedNo404: 150 pre-queued users are polled without pause (Status and
// Statuses, from a third instance) while two instances merge them by
// slices of 10 and late arrivals come: no poll ever says "not in queue",
// each user goes PREQUEUE → WAITING (never back), the late arrivals follow
// everyone in their arrival order, and nobody is lost or duplicated.
func shardedNo404(t *testing.T, e shardedEnv) {
	ctx := context.Background()
	a, b, poller := e.queue(10), e.queue(10), e.queue(10)
	e.room(t, a, "r", 3, queue.MethodRandom, 0)
	us := users("u", 150)
	enterAll(t, a, "r", us)
	e.openNow(t, a, "r")

	stop := make(chan struct{})
	var polls, bad atomic.Int64
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			waiting := map[string]bool{}
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := w; i < len(us); i += 2 {
					u := us[i]
					var st queue.Status
					var err error
					if i%3 == 0 {
						var sts []queue.Status
						var errs []error
						sts, errs, err = poller.Statuses(ctx, "r", []string{u})
						if err == nil {
							st, err = sts[0], errs[0]
						}
					} else {
						st, err = poller.Status(ctx, "r", u)
					}
					polls.Add(1)
					switch {
					case err != nil:
						t.Errorf("poll of %s during the opening: %v", u, err)
						bad.Add(1)
					case st.State == queue.Waiting:
						waiting[u] = true
					case st.State == queue.PreQueue && waiting[u]:
						t.Errorf("%s went back from WAITING to PREQUEUE", u)
						bad.Add(1)
					case st.State != queue.PreQueue:
						t.Errorf("%s: %v", u, st.State)
						bad.Add(1)
					}
					if bad.Load() > 5 {
						return
					}
				}
			}
		})
	}
	var reports []queue.OpenResult
	var mu sync.Mutex
	var mergers sync.WaitGroup
	for _, inst := range []*queue.Queue{a, b} {
		mergers.Go(func() {
			for {
				res, err := inst.Merge(ctx, "r", queue.NewShuffleSeed())
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
	late := users("late", 10)
	for _, u := range late {
		st, err := b.Enter(ctx, "r", u)
		if err != nil || (st.State != queue.PreQueue && st.State != queue.Waiting) {
			t.Fatalf("a late arrival: %+v, %v", st, err)
		}
	}
	mergers.Wait()
	// Let the pollers see everyone waiting before they stop.
	for _, u := range us {
		queuetest.WaitFor(t, u+" waiting", func() bool {
			st, err := poller.Status(ctx, "r", u)
			return err == nil && st.State == queue.Waiting
		})
	}
	close(stop)
	wg.Wait()
	if polls.Load() < int64(len(us)) {
		t.Fatalf("only %d polls", polls.Load())
	}
	var seed string
	for _, r := range reports {
		if r.Moved > 0 {
			seed = r.Seed
		}
	}
	if seed == "" {
		info, _ := a.Room(ctx, "r")
		seed = info.ShuffleSeed
	}
	got, tickets := e.order(t, "r")
	contiguous(t, tickets)
	// The late arrivals came after the opening time: the parts refused
	// them, and they follow everyone in their arrival order.
	if want := append(queue.ShuffleParts(seed, 3, us), late...); !slices.Equal(got, want) {
		t.Fatalf("queue %v\nwant ShuffleParts(seed) then the late arrivals %v", got, want)
	}
	t.Logf("%d polls during the opening, none of them not in queue", polls.Load())
}

func TestShardedOpeningNoSpurious404(t *testing.T) { shardedNo404(t, singleRedis(t)) }

// shardedAdmission: admission starts after the first slice (while users
// are still in the parts), admits in the merged order, and an arrival
// during the merge joins behind everyone; a fifo room merges by arrival
// time across parts.
func shardedAdmission(t *testing.T, e shardedEnv) {
	ctx := context.Background()
	q := e.queue(5)
	e.room(t, q, "r", 3, queue.MethodRandom, 3)
	us := users("u", 30)
	enterAll(t, q, "r", us)
	if res, err := q.Admit(ctx, "r", 8); err != nil || res.Merge != queue.MergeArmed || res.Due || len(res.Admitted) != 0 || !res.Busy() {
		t.Fatalf("admission before the opening: %+v, %v (want armed, not due, busy)", res, err)
	}
	e.openNow(t, q, "r")
	if res, err := q.Admit(ctx, "r", 8); err != nil || !res.Due || len(res.Admitted) != 0 {
		t.Fatalf("admission at the opening: %+v, %v (want due, nobody admitted)", res, err)
	}
	// Seal and begin, then shuffle (by slices), then the first slice.
	for range 20 {
		if _, err := queue.MergeStep(q, "r", queue.NewShuffleSeed(), -1); err != nil {
			t.Fatal(err)
		}
		if users, _ := e.order(t, "r"); len(users) > 0 {
			break
		}
	}
	first, _ := e.order(t, "r")
	if len(first) != 5 {
		t.Fatalf("after the first slice the queue holds %v, want 5", first)
	}
	res, err := q.Admit(ctx, "r", 8)
	if err != nil || res.Merge != queue.MergeMoving || res.Due || len(res.Admitted) != 3 || !slices.Equal(res.Admitted, first[:3]) {
		t.Fatalf("admission after the first slice: %+v, %v (want %v admitted while moving)", res, err, first[:3])
	}
	st, err := q.Enter(ctx, "r", "late")
	if err != nil || st.State != queue.PreQueue || !st.New {
		t.Fatalf("an arrival during the merge: %+v, %v", st, err)
	}
	done := mergeAll(t, q, "r")
	got, _ := e.order(t, "r")
	want := queue.ShuffleParts(done.Seed, 3, us)
	if !slices.Equal(append(slices.Clone(first[:3]), got...), append(want, "late")) {
		t.Fatalf("admitted %v then queue %v, want %v then late", first[:3], got, want)
	}

	// fifo: one clock here (one machine), so arrival order exactly.
	e.room(t, q, "f", 3, queue.MethodFIFO, 0)
	fifo := users("f", 20)
	enterAll(t, q, "f", fifo)
	e.openNow(t, q, "f")
	if res := mergeAll(t, q, "f"); res.Moved != 20 || res.Seed != "" {
		t.Fatalf("fifo opening: %+v", res)
	}
	if got, _ := e.order(t, "f"); !slices.Equal(got, fifo) {
		t.Fatalf("fifo queue %v, want arrival order %v", got, fifo)
	}
}

func TestShardedAdmission(t *testing.T) { shardedAdmission(t, singleRedis(t)) }

// testLogger is an admitter's logger for tb: its lines (a room opened) go
// to the test's output, shown with -v or when tb fails.
func testLogger(tb testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tb.Output(), nil))
}

// shardedAdmitter: the admission loop runs a sharded opening by itself:
// two admitters tick a room whose 80 users entered in bulk (Enters, which
// follows the room's PART answer, and EntersParts) until everyone is
// admitted, once each, in the merged order; the room is then idle. It is
// the one test of package admission kept here: it merges in slices of 9
// users (SetOpenSlice, for queue's own tests only), so the merge takes
// many ticks shared by the two admitters.
func shardedAdmitter(t *testing.T, e shardedEnv) {
	ctx := context.Background()
	q := e.queue(9)
	e.room(t, q, "r", 3, queue.MethodRandom, 1000)
	us := users("u", 80)
	sts, errs, err := q.Enters(ctx, "r", us[:40]...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range sts {
		if errs[i] != nil || sts[i].State != queue.PreQueue || !sts[i].New {
			t.Fatalf("Enters %s: %+v, %v", us[i], sts[i], errs[i])
		}
	}
	sts, errs, err = q.EntersParts(ctx, "r", 3, us[40:]...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range sts {
		if errs[i] != nil || sts[i].State != queue.PreQueue || !sts[i].New {
			t.Fatalf("EntersParts %s: %+v, %v", us[40+i], sts[i], errs[i])
		}
	}
	if info, err := q.Room(ctx, "r"); err != nil || info.PreQueue != 80 {
		t.Fatalf("room %+v, %v", info, err)
	}
	var mu sync.Mutex
	var admitted []string
	onAdmit := func(r queue.AdmitResult) {
		mu.Lock()
		admitted = append(admitted, r.Admitted...)
		mu.Unlock()
	}
	a := admission.New(q, admission.Options{Logger: testLogger(t), OnAdmit: onAdmit})
	b := admission.New(e.queue(9), admission.Options{Logger: testLogger(t), OnAdmit: onAdmit})
	if err := a.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if len(admitted) != 0 {
		t.Fatalf("admitted before the opening: %v", admitted)
	}
	e.openNow(t, q, "r")
	for i := 0; ; i++ {
		mu.Lock()
		n := len(admitted)
		mu.Unlock()
		if n >= len(us) {
			break
		}
		if i > 200 {
			t.Fatalf("after %d ticks %d admitted", i, n)
		}
		for _, x := range []*admission.Admitter{a, b} {
			if err := x.Tick(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	info, err := q.Room(ctx, "r")
	if err != nil || info.ShuffleSeed == "" || info.PreQueue != 0 || info.Waiting != 0 || info.Admitted != 80 {
		t.Fatalf("room after the opening: %+v, %v", info, err)
	}
	if want := queue.ShuffleParts(info.ShuffleSeed, 3, us); !slices.Equal(admitted, want) {
		t.Fatalf("admitted %v\nwant %v", admitted, want)
	}
	for _, u := range us {
		if st, err := q.Status(ctx, "r", u); err != nil || st.State != queue.Ready {
			t.Fatalf("%s: %+v, %v", u, st, err)
		}
	}
	if busy, err := q.Busy(ctx, []string{"r"}); err != nil || !busy[0] {
		t.Fatalf("busy %v, %v (the admitted hold their slots)", busy, err)
	}
	if n := e.rdb.Exists(ctx, e.prefix+"{r}:merge").Val(); n != 0 {
		t.Fatal("the merge record outlived the opening")
	}
}

func TestShardedOpeningThroughAdmitter(t *testing.T) { shardedAdmitter(t, singleRedis(t)) }

// TestShardedPrequeueOnCluster runs the same tests on a 3-master Redis
// Cluster, after checking that a room's parts do sit on different
// masters: every script call names keys of one slot (a cross-slot call
// fails there), and the parts are spread.
func TestShardedPrequeueOnCluster(t *testing.T) {
	addrs := queuetest.Cluster(t, 3)
	rdb := queuetest.ClusterClient(t, addrs)
	ctx := context.Background()
	masters := map[string]bool{}
	for p := range 3 {
		slot, err := rdb.ClusterKeySlot(ctx, fmt.Sprintf("x{hot~%d}", p)).Result()
		if err != nil {
			t.Fatal(err)
		}
		slots, err := rdb.ClusterSlots(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range slots {
			if int64(s.Start) <= slot && slot <= int64(s.End) {
				masters[s.Nodes[0].Addr] = true
			}
		}
	}
	if len(masters) < 2 {
		t.Fatalf("the parts of room hot sit on %v: want at least two masters", masters)
	}
	env := func() shardedEnv { return shardedEnv{rdb, queuetest.Prefix()} }
	t.Run("enter-status", func(t *testing.T) { shardedEnterStatus(t, env()) })
	t.Run("fairness", func(t *testing.T) { shardedFairness(t, env(), 300) })
	t.Run("crashes", func(t *testing.T) { shardedCrashes(t, env()) })
	t.Run("no-404", func(t *testing.T) { shardedNo404(t, env()) })
	t.Run("admission", func(t *testing.T) { shardedAdmission(t, env()) })
	t.Run("admitter", func(t *testing.T) { shardedAdmitter(t, env()) })
}

// TestShardedThenUnshardedOpening: a room's record of its last opening
// names the parts it merged, and an unsharded opening after a sharded one
// names 1, so the seed is never read with the wrong reproduction.
func TestShardedThenUnshardedOpening(t *testing.T) {
	e := singleRedis(t)
	ctx := context.Background()
	q := e.queue(100)
	e.room(t, q, "r", 3, queue.MethodRandom, 0)
	enterAll(t, q, "r", users("a", 9))
	e.openNow(t, q, "r")
	mergeAll(t, q, "r")
	if info, err := q.Room(ctx, "r"); err != nil || info.ShuffleParts != 3 || info.ShuffleSeed == "" {
		t.Fatalf("after the sharded opening: %+v, %v", info, err)
	}
	e.room(t, q, "r", 1, queue.MethodRandom, 0)
	second := users("b", 5)
	enterAll(t, q, "r", second)
	e.openNow(t, q, "r")
	res, err := q.Open(ctx, "r", queue.NewShuffleSeed())
	if err != nil || !res.Done || res.Moved != 5 {
		t.Fatalf("unsharded opening: %+v, %v", res, err)
	}
	info, err := q.Room(ctx, "r")
	if err != nil || info.ShuffleParts != 1 || info.ShuffleSeed != res.Seed {
		t.Fatalf("after the unsharded opening: %+v, %v (want 1 part and its seed)", info, err)
	}
}
