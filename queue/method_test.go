package queue_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue"
	"waitingroom/queue/queuetest"
)

func ptr[T any](v T) *T { return &v }

// chiSquare is the statistic of observed counts against a uniform expectation.
func chiSquare(counts []int, total int) float64 {
	want := float64(total) / float64(len(counts))
	var x float64
	for _, c := range counts {
		d := float64(c) - want
		x += d * d / want
	}
	return x
}

// TestShuffleIsFairAndReproducible runs the opening script itself 2,000
// times on 10 pre-queued users with fresh seeds. Every user's position
// distribution passes a chi-square test against uniform (9 degrees of
// freedom, α = 0.0001 per user, critical value 33.72), and every result
// equals queue.Shuffle of its recorded seed over the users.
func TestShuffleIsFairAndReproducible(t *testing.T) {
	q, rdb := mustQueue(t, 0, time.Minute)
	prefix := prefixOf(t, q, rdb)
	ctx := context.Background()
	const runs, n = 2000, 10
	counts := make([][]int, n) // counts[user][position]
	for i := range counts {
		counts[i] = make([]int, n)
	}
	future := queuetest.RedisNow(t, rdb).Add(time.Hour)
	for run := range runs {
		room := "s" + strconv.Itoa(run)
		queuetest.Update(t, q, room, queue.RoomUpdate{Method: ptr(queue.MethodRandom), OpensAt: &future})
		arrival := make([]string, n)
		for u := range n {
			arrival[u] = "u" + strconv.Itoa(u)
			st, err := q.Enter(ctx, room, arrival[u])
			if err != nil || st.State != queue.PreQueue || st.Position != 0 || st.Ticket != 0 {
				t.Fatalf("enter before opening: %+v, %v (want PREQUEUE without position or ticket)", st, err)
			}
		}
		queuetest.Update(t, q, room, queue.RoomUpdate{OpensAt: &time.Time{}})
		seed := queue.NewShuffleSeed()
		res, err := q.Open(ctx, room, seed)
		if err != nil || res.Moved != n || res.Shuffled != n || res.Seed != seed {
			t.Fatalf("open: %+v, %v", res, err)
		}
		got, tickets := queuetest.Order(t, rdb, prefix, room)
		order := queue.Shuffle(seed, arrival)
		for pos, u := range got {
			if want := order[pos]; u != want {
				t.Fatalf("run %d: position %d is %s, Shuffle(seed) says %s", run, pos+1, u, want)
			}
			if tickets[pos] != int64(pos+1) {
				t.Fatalf("run %d: tickets %v, want 1..%d", run, tickets, n)
			}
			idx, _ := strconv.Atoi(u[1:])
			counts[idx][pos]++
		}
		info, _ := q.Room(ctx, room)
		if info.ShuffleSeed != seed || info.PreQueue != 0 || info.Waiting != n {
			t.Fatalf("room after opening: %+v", info)
		}
		if run < 3 || run == runs-1 {
			continue
		}
		rdb.Del(ctx, prefix+"{"+room+"}:cfg") // keep the keyspace small; the room is done
	}
	const critical = 33.72 // chi-square, 9 degrees of freedom, p = 0.0001
	worst := 0.0
	for u, c := range counts {
		x := chiSquare(c, runs)
		worst = max(worst, x)
		if x > critical {
			t.Errorf("user u%d: positions %v, chi-square %.1f > %.2f", u, c, x, critical)
		}
	}
	t.Logf("%d shuffles of %d users: largest per-user chi-square %.1f (critical %.2f)", runs, n, worst, critical)
	// The same check rejects a biased order: arrival order kept.
	biased := make([]int, n)
	biased[0] = runs
	if x := chiSquare(biased, runs); x <= critical {
		t.Fatalf("the check accepts an unshuffled order (chi-square %.1f)", x)
	}
	// The same seed reproduces the same order, whatever order the users
	// are listed in.
	seed := queue.NewShuffleSeed()
	users := make([]string, 50)
	for i := range users {
		users[i] = "u" + strconv.Itoa(i)
	}
	a := queue.Shuffle(seed, users)
	slices.Reverse(users)
	if b := queue.Shuffle(seed, users); !slices.Equal(a, b) {
		t.Fatalf("Shuffle not reproducible: %v vs %v", a, b)
	}
}

// prefixOf recovers the test's key prefix from a room's key.
func prefixOf(t *testing.T, q *queue.Queue, _ *redis.Client) string {
	t.Helper()
	return strings.TrimSuffix(q.RoomKey("r1", ""), "{r1}:")
}

// TestRandomOpeningPutsLateArrivalsBehind: with method random, those who
// arrived after the opening time but before the opening run are not
// shuffled: they follow the shuffled ones in arrival order.
func TestRandomOpeningPutsLateArrivalsBehind(t *testing.T) {
	q, rdb := mustQueue(t, 0, time.Minute)
	prefix := prefixOf(t, q, rdb)
	ctx := context.Background()
	far := queuetest.RedisNow(t, rdb).Add(time.Hour)
	queuetest.Update(t, q, "r1", queue.RoomUpdate{Method: ptr(queue.MethodRandom), OpensAt: &far})
	for i := range 8 {
		mustEnter(t, q, "e"+strconv.Itoa(i))
	}
	past := queuetest.RedisNow(t, rdb).Add(-time.Second)
	queuetest.Update(t, q, "r1", queue.RoomUpdate{OpensAt: &past})
	for _, u := range []string{"l1", "l2"} {
		if st := mustEnter(t, q, u); st.State != queue.PreQueue {
			t.Fatalf("%s before the opening run: %+v", u, st)
		}
	}
	seed := "00112233445566778899aabbccddeeff"
	res, err := q.Open(ctx, "r1", seed)
	if err != nil || res.Moved != 10 || res.Shuffled != 8 {
		t.Fatalf("open: %+v, %v", res, err)
	}
	users, _ := queuetest.Order(t, rdb, prefix, "r1")
	early := make([]string, 8)
	for i := range early {
		early[i] = "e" + strconv.Itoa(i)
	}
	order := queue.Shuffle(seed, early)
	for pos := range 8 {
		if want := order[pos]; users[pos] != want {
			t.Fatalf("position %d: %s, want %s (queue %v)", pos+1, users[pos], want, users)
		}
	}
	if !slices.Equal(users[8:], []string{"l1", "l2"}) {
		t.Fatalf("late arrivals: %v", users[8:])
	}
}

// TestRejectKeepsWaitingUsers: new entries get ErrRoomClosed; those
// waiting keep their place, see Closed and are not admitted until the
// method changes back.
func TestRejectKeepsWaitingUsers(t *testing.T) {
	q, _ := mustQueue(t, 5, time.Minute)
	ctx := context.Background()
	mustEnter(t, q, "a")
	mustEnter(t, q, "b")
	queuetest.Update(t, q, "r1", queue.RoomUpdate{Method: ptr(queue.MethodReject)})
	if _, err := q.Enter(ctx, "r1", "c"); !errors.Is(err, queue.ErrRoomClosed) {
		t.Fatalf("enter a closed room: %v, want ErrRoomClosed", err)
	}
	if res := mustAdmit(t, q, 8); len(res.Admitted) != 0 {
		t.Fatalf("a closed room admitted %v", res.Admitted)
	}
	for i, u := range []string{"a", "b"} {
		st, err := q.Status(ctx, "r1", u)
		if err != nil || st.State != queue.Closed || st.Position != int64(i+1) {
			t.Fatalf("status of %s: %+v, %v", u, st, err)
		}
		if again := mustEnter(t, q, u); again.State != queue.Closed || again.Position != int64(i+1) {
			t.Fatalf("re-enter of %s: %+v", u, again)
		}
	}
	queuetest.Update(t, q, "r1", queue.RoomUpdate{Method: ptr(queue.MethodFIFO)})
	if res := mustAdmit(t, q, 8); !slices.Equal(res.Admitted, []string{"a", "b"}) {
		t.Fatalf("reopened room admitted %v", res.Admitted)
	}
}

// TestPassthroughAdmitsAtOnce: entering is admission, beyond targetActive;
// those already waiting are admitted by the next run.
func TestPassthroughAdmitsAtOnce(t *testing.T) {
	q, _ := mustQueue(t, 1, time.Minute)
	mustEnter(t, q, "w1")
	mustEnter(t, q, "w2")
	mustEnter(t, q, "w3")
	info := queuetest.Update(t, q, "r1", queue.RoomUpdate{Method: ptr(queue.MethodPassthrough)})
	if info.Method != queue.MethodPassthrough {
		t.Fatalf("method = %q", info.Method)
	}
	for i := range 4 {
		st := mustEnter(t, q, fmt.Sprintf("n%d", i))
		if st.State != queue.Ready || st.EntryToken == "" || !st.New {
			t.Fatalf("passthrough enter: %+v", st)
		}
		if again := mustEnter(t, q, fmt.Sprintf("n%d", i)); again.State != queue.Ready || again.EntryToken != st.EntryToken || again.New {
			t.Fatalf("passthrough re-enter: %+v", again)
		}
	}
	res := mustAdmit(t, q, 8)
	if len(res.Admitted) != 3 || res.Waiting != 0 || res.Active != 7 {
		t.Fatalf("passthrough run: %+v (want the 3 waiting admitted beyond target 1)", res)
	}
}
