package queue_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue"
	"waitingroom/queue/queuetest"
)

// presenceQueue is a queue with presence-aware admission on (grace 50 ms:
// a user entered and not touched since is absent once it has passed) and
// room "r1" of target slots.
func presenceQueue(t *testing.T, target int64, idle time.Duration) (*queue.Queue, *redis.Client) {
	t.Helper()
	return presenceQueueGrace(t, target, idle, 50*time.Millisecond)
}

// presenceQueueGrace is presenceQueue with the grace an entry gives: long
// enough, for a test that needs a user present from an entry to a later
// admission run, that no slow machine makes the user absent meanwhile.
func presenceQueueGrace(t *testing.T, target int64, idle, grace time.Duration) (*queue.Queue, *redis.Client) {
	t.Helper()
	rdb, prefix := queuetest.Redis(t)
	q := queue.New(rdb, queue.Options{Prefix: prefix, Grace: grace, IdleTimeout: idle})
	if err := q.EnsureRoom(context.Background(), "r1", queue.RoomConfig{Target: target, EntryTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	return q, rdb
}

// mustPassRedisTime waits until Redis's clock is d past now (by Redis's
// clock): the scripts judge presence by it.
func mustPassRedisTime(t *testing.T, rdb *redis.Client, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	start, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	queuetest.WaitFor(t, "Redis's clock", func() bool {
		now, err := rdb.Time(ctx).Result()
		return err == nil && now.Sub(start) > d
	})
}

func mustTouch(t *testing.T, q *queue.Queue, grace time.Duration, users ...string) {
	t.Helper()
	if err := q.Touch(context.Background(), "r1", users, grace); err != nil {
		t.Fatal(err)
	}
}

// mustPositionsHonest checks that every user of want waits at the
// 1-based position given, read by the status script, and that the
// position the hubs derive from a snapshot (ticket − serving − departed
// below) is the same.
func mustPositionsHonest(t *testing.T, q *queue.Queue, want map[string]int64) {
	t.Helper()
	ctx := context.Background()
	sns, err := q.Snapshots(ctx, []string{"r1"})
	if err != nil {
		t.Fatal(err)
	}
	sn := sns[0]
	for user, pos := range want {
		st, err := q.Status(ctx, "r1", user)
		if err != nil || st.State != queue.Waiting || st.Position != pos {
			t.Fatalf("%s: status %+v, %v; want WAITING at %d", user, st, err, pos)
		}
		below := 0
		for _, g := range sn.Gone {
			if g < st.Ticket {
				below++
			}
			if g == st.Ticket {
				t.Fatalf("%s: ticket %d is in the gone set %v", user, g, sn.Gone)
			}
		}
		if st.Ticket <= sn.Serving {
			t.Fatalf("%s: ticket %d at or below serving %d", user, st.Ticket, sn.Serving)
		}
		if got := st.Ticket - sn.Serving - int64(below); got != pos {
			t.Fatalf("%s: derived position %d (ticket %d, serving %d, gone %v), status says %d", user, got, st.Ticket, sn.Serving, sn.Gone, pos)
		}
	}
}

// TestAbsentUserIsPassedOver: an absent user at the front keeps the ticket
// and place while the present ones behind are admitted in ticket order;
// seen again, they are admitted at the next run ahead of everyone behind.
// Positions stay the 1-based rank, by the status script and as derived
// from the events and snapshots.
func TestAbsentUserIsPassedOver(t *testing.T) {
	q, rdb := presenceQueue(t, 2, time.Hour)
	ctx := context.Background()
	next, _ := mustSubscribe(t, q)
	for _, u := range []string{"ghost", "b", "c", "d", "e"} {
		mustEnter(t, q, u)
	}
	mustTouch(t, q, time.Hour, "b", "c", "d", "e")
	mustPassRedisTime(t, rdb, 60*time.Millisecond) // ghost's grace is over

	res := queuetest.Admit(t, q, 8)
	if got, want := res.Admitted, []string{"b", "c"}; !slices.Equal(got, want) || res.Passed != 1 {
		t.Fatalf("admitted %v, passed %d; want %v, 1", got, res.Passed, want)
	}
	ev := nextEvent(t, next, func(e queue.Event) bool { return len(e.Admitted) > 0 })
	if ev.Serving != 0 || !slices.Equal(ev.Left, []int64{2, 3}) {
		t.Fatalf("event serving %d left %v; want 0 and the admitted tickets [2 3]", ev.Serving, ev.Left)
	}
	mustPositionsHonest(t, q, map[string]int64{"ghost": 1, "d": 2, "e": 3})

	// Still absent, still passed over: nobody else is admitted either
	// (the room is full), and nothing moves.
	if st, err := q.Status(ctx, "r1", "b"); err != nil || st.State != queue.Ready {
		t.Fatalf("b = %+v, %v; want READY", st, err)
	}

	// The ghost comes back; b leaves its slot: the ghost goes first.
	mustTouch(t, q, time.Hour, "ghost")
	if _, err := q.Leave(ctx, "r1", "b"); err != nil {
		t.Fatal(err)
	}
	res = queuetest.Admit(t, q, 8)
	if got, want := res.Admitted, []string{"ghost"}; !slices.Equal(got, want) || res.Passed != 0 {
		t.Fatalf("admitted %v, passed %d; want %v, 0", got, res.Passed, want)
	}
	ev = nextEvent(t, next, func(e queue.Event) bool { return len(e.Admitted) > 0 })
	if ev.Serving != 3 {
		t.Fatalf("event serving %d; want 3 (everyone up to d's ticket is served)", ev.Serving)
	}
	mustPositionsHonest(t, q, map[string]int64{"d": 1, "e": 2})
	if sns, _ := q.Snapshots(ctx, []string{"r1"}); len(sns[0].Gone) != 0 {
		t.Fatalf("gone %v after serving moved past every admission", sns[0].Gone)
	}
}

// nextEvent returns the next event of room r1 that match accepts.
func nextEvent(t *testing.T, next func() (queue.Notice, bool), match func(queue.Event) bool) queue.Event {
	t.Helper()
	for {
		n, ok := next()
		if !ok {
			t.Fatal("subscription ended")
		}
		if n.Err == nil && !n.Subscribed && n.Event.Room == "r1" && match(n.Event) {
			return n.Event
		}
	}
}

// TestPresentUsersStayInOrder: with absent users scattered through the
// line, the present ones are admitted exactly in ticket order, run after
// run, and the absent keep their places.
func TestPresentUsersStayInOrder(t *testing.T) {
	q, rdb := presenceQueue(t, 100, time.Hour)
	var present, absent []string
	for i := range 40 {
		u := "u" + string(rune('a'+i/26)) + string(rune('a'+i%26))
		mustEnter(t, q, u)
		if i%3 == 0 {
			absent = append(absent, u)
		} else {
			present = append(present, u)
		}
	}
	mustTouch(t, q, time.Hour, present...)
	mustPassRedisTime(t, rdb, 60*time.Millisecond)
	var admitted []string
	for range 10 {
		admitted = append(admitted, queuetest.Admit(t, q, 3).Admitted...)
	}
	if !slices.Equal(admitted, present[:len(admitted)]) || len(admitted) != len(present) {
		t.Fatalf("admitted %v; want the present %v in order", admitted, present)
	}
	want := map[string]int64{}
	for i, u := range absent {
		want[u] = int64(i + 1)
	}
	mustPositionsHonest(t, q, want)
}

// TestPassOverNeedsEvidence: a waiting user with no seen entry is
// never judged absent, and with presence-aware admission off (no grace)
// the line pops in ticket order whoever was seen.
func TestPassOverNeedsEvidence(t *testing.T) {
	t.Run("no seen entry", func(t *testing.T) {
		q, rdb := presenceQueue(t, 1, time.Hour)
		mustEnter(t, q, "a")
		mustEnter(t, q, "b")
		if err := rdb.ZRem(context.Background(), q.RoomKey("r1", "seen"), "a").Err(); err != nil {
			t.Fatal(err)
		}
		mustTouch(t, q, time.Hour, "b")
		mustPassRedisTime(t, rdb, 60*time.Millisecond)
		if got := queuetest.Admit(t, q, 8).Admitted; !slices.Equal(got, []string{"a"}) {
			t.Fatalf("admitted %v; want [a]", got)
		}
	})
	t.Run("off", func(t *testing.T) {
		q, rdb := queuetest.Queue(t, 1, time.Minute)
		mustEnter(t, q, "a")
		mustEnter(t, q, "b")
		mustTouch(t, q, time.Hour, "b")
		mustPassRedisTime(t, rdb, 10*time.Millisecond)
		if got := queuetest.Admit(t, q, 8).Admitted; !slices.Equal(got, []string{"a"}) {
			t.Fatalf("admitted %v; want [a]", got)
		}
	})
}

// TestReenterKeepsThePlace: entering again (a reload) keeps the ticket
// and counts as being seen: the user is not passed over.
func TestReenterKeepsThePlace(t *testing.T) {
	// The entry again must make "a" present until the run that follows
	// it, on a machine however slow: an entry's grace of a second.
	const grace = time.Second
	q, rdb := presenceQueueGrace(t, 1, time.Hour, grace)
	first := mustEnter(t, q, "a")
	mustEnter(t, q, "b")
	mustTouch(t, q, time.Hour, "b")
	mustPassRedisTime(t, rdb, grace+10*time.Millisecond)
	again := mustEnter(t, q, "a")
	if again.New || again.Ticket != first.Ticket || again.Position != 1 {
		t.Fatalf("enter again = %+v; want the first ticket %d at 1", again, first.Ticket)
	}
	if got := queuetest.Admit(t, q, 8).Admitted; !slices.Equal(got, []string{"a"}) {
		t.Fatalf("admitted %v; want [a]", got)
	}
}

// TestPassedOverUserIsRemovedWhenIdle: an absent user overdue by the idle
// timeout is removed as before; serving then moves past the admissions
// made while they were passed over.
func TestPassedOverUserIsRemovedWhenIdle(t *testing.T) {
	q, rdb := presenceQueue(t, 1, 200*time.Millisecond)
	ctx := context.Background()
	mustEnter(t, q, "ghost")
	mustEnter(t, q, "b")
	mustEnter(t, q, "c")
	mustTouch(t, q, time.Hour, "b", "c")
	mustPassRedisTime(t, rdb, 60*time.Millisecond)
	if got := queuetest.Admit(t, q, 8).Admitted; !slices.Equal(got, []string{"b"}) {
		t.Fatalf("admitted %v; want [b]", got)
	}
	mustPositionsHonest(t, q, map[string]int64{"ghost": 1, "c": 2})
	mustPassRedisTime(t, rdb, 250*time.Millisecond)
	res := queuetest.Admit(t, q, 8)
	if res.Abandoned != 1 || len(res.Admitted) != 0 {
		t.Fatalf("admit = %+v; want the ghost removed, nobody admitted (full)", res)
	}
	if _, err := q.Status(ctx, "r1", "ghost"); err == nil {
		t.Fatal("ghost still has a status after the idle timeout")
	}
	mustPositionsHonest(t, q, map[string]int64{"c": 1})
	if sns, _ := q.Snapshots(ctx, []string{"r1"}); sns[0].Serving != 2 || len(sns[0].Gone) != 0 {
		t.Fatalf("snapshot serving %d gone %v; want 2 and none", sns[0].Serving, sns[0].Gone)
	}
}

// TestPassedOverCountedOnce: the estimator's counters of passed-over users
// (queue.Flow): each absent user is counted once, when the first user
// behind them is admitted (not when nobody behind was), still waiting while
// their ticket is below the highest admitted, and not counted again as a
// departure when they leave or are dropped as idle; an absent user dropped
// before anyone behind was admitted is a departure.
func TestPassedOverCountedOnce(t *testing.T) {
	q, rdb := presenceQueue(t, 10, time.Hour)
	ctx := context.Background()
	flow := func(passed, waiting, departed int64) {
		t.Helper()
		f := mustSnapshot(t, q, queue.GoneHeld{}).Flow
		if f.Passed != passed || f.PassedWaiting != waiting || f.Departed != departed {
			t.Fatalf("passed %d, still waiting %d, departed %d; want %d, %d, %d",
				f.Passed, f.PassedWaiting, f.Departed, passed, waiting, departed)
		}
	}
	for _, u := range []string{"ghost", "a", "ghost2"} {
		mustEnter(t, q, u)
	}
	mustTouch(t, q, time.Hour, "a")
	mustPassRedisTime(t, rdb, 60*time.Millisecond)
	if res := queuetest.Admit(t, q, 8); !slices.Equal(res.Admitted, []string{"a"}) || res.Passed != 1 || res.PassedFirst != 1 {
		t.Fatalf("admitted %v, passed %d (%d first); want [a], 1 (1): ghost2 has nobody admitted behind", res.Admitted, res.Passed, res.PassedFirst)
	}
	flow(1, 1, 0)
	if res := queuetest.Admit(t, q, 8); len(res.Admitted) != 0 || res.Passed != 0 {
		t.Fatalf("admitted %v, passed %d; want nobody, 0", res.Admitted, res.Passed)
	}
	flow(1, 1, 0)

	mustEnter(t, q, "b")
	mustTouch(t, q, time.Hour, "b")
	if res := queuetest.Admit(t, q, 8); !slices.Equal(res.Admitted, []string{"b"}) || res.Passed != 2 || res.PassedFirst != 1 {
		t.Fatalf("admitted %v, passed %d (%d first); want [b], 2 (1: ghost2)", res.Admitted, res.Passed, res.PassedFirst)
	}
	flow(2, 2, 0) // ghost was counted by the first run, ghost2 by this one

	if _, err := q.Leave(ctx, "r1", "ghost"); err != nil {
		t.Fatal(err)
	}
	flow(2, 1, 0)

	// ghost2 (passed over) and c (absent, nobody behind admitted) are
	// overdue by far more than the idle timeout: both are dropped.
	mustEnter(t, q, "c")
	seen := q.RoomKey("r1", "seen")
	if err := rdb.ZAdd(ctx, seen, redis.Z{Score: 1, Member: "ghost2"}, redis.Z{Score: 1, Member: "c"}).Err(); err != nil {
		t.Fatal(err)
	}
	if res := queuetest.Admit(t, q, 8); res.Abandoned != 2 || len(res.Admitted) != 0 {
		t.Fatalf("abandoned %d, admitted %v; want 2, nobody", res.Abandoned, res.Admitted)
	}
	flow(2, 0, 1)
}
