package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue"
)

// presenceVars run instances whose one poll band is 500 ms, so a poller
// counts present for 2.5 s after a poll (presence.Grace) and a user who
// entered and never polled is absent 2.5 s later; admission is driven by
// the test (admit), the presence flusher runs on its own.
var presenceVars = map[string]string{"WR_TARGET_ACTIVE": "0", "WR_POLL_BANDS": "*:500ms", "WR_IDLE_TIMEOUT": "1m"}

// keepPolling polls with each token every 200 ms until the test ends, as
// open pages do.
func keepPolling(t *testing.T, in *instance, room string, tokens ...string) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			for _, tok := range tokens {
				req, _ := http.NewRequest("GET", in.base+"/api/v1/rooms/"+room+"/position", nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				if res, err := client.Do(req); err == nil {
					res.Body.Close()
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
	t.Cleanup(func() { close(stop); wg.Wait() })
}

// expectedBack is the user's seen score against Redis's clock: how long
// until they count as absent (negative: absent).
func expectedBack(t *testing.T, e *env, in *instance, room, userID string) time.Duration {
	t.Helper()
	ctx := context.Background()
	due, err := e.rdb.ZScore(ctx, in.parts.Queue.RoomKey(room, "seen"), userID).Result()
	if err != nil {
		t.Fatalf("seen score of %s: %v", userID, err)
	}
	now, err := e.rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	return time.UnixMilli(int64(due)).Sub(now)
}

// ageSeen makes the expected return of every waiting user of room past
// (score 0), as if none had been seen for a long time: for tests of what
// an idle drop does, without waiting out a stream's grace.
func ageSeen(t *testing.T, e *env, in *instance, room string) {
	t.Helper()
	ctx := context.Background()
	key := in.parts.Queue.RoomKey(room, "seen")
	users, err := e.rdb.ZRange(ctx, key, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if err := e.rdb.ZAddXX(ctx, key, redis.Z{Score: 0, Member: u}).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// mustWaitingAt polls token on in and checks it waits at pos.
func mustWaitingAt(t *testing.T, in *instance, room, token string, pos int64) {
	t.Helper()
	r := in.position(room, token)
	if r.status != 200 || r.str("status") != "WAITING" || r.num("position") != pos {
		t.Fatalf("poll = %d %s; want WAITING at %d", r.status, r.raw, pos)
	}
}

// TestAbsentUserIsPassedOver, end to end on two instances: a user who
// entered and was never seen again is passed over by admission while a
// poller and a stream holder behind are admitted in ticket order; the
// passed-over user is told WAITING at position 1 and everyone behind
// counts them, on both instances' hubs, by poll and by push, with no
// position ever going up; seen again (a poll with the same token, as a
// reload makes), they are admitted at the next run ahead of everyone
// behind.
func TestAbsentUserIsPassedOver(t *testing.T) {
	longScenario(t)
	e := newEnv(t)
	a := e.start(presenceVars)
	b := e.start(presenceVars)
	const room = "default"

	ghost := a.enter(user(1), room).str("queueToken") // never seen again, for now
	poller := a.enter(user(2), room).str("queueToken")
	streamer := openSSE(t, b, room, a.enter(user(3), room).str("queueToken"))
	behind := a.enter(user(4), room).str("queueToken")
	last := openSSE(t, b, room, a.enter(user(5), room).str("queueToken"))
	keepPolling(t, a, room, poller, behind)
	if _, m := streamer.next(t); m.Position != 3 {
		t.Fatalf("the stream holder starts at %d", m.Position)
	}
	_, m := last.next(t)
	pushed := []int64{m.Position}

	// The ghost's grace passes; the stream holder's presence is written by
	// b's flusher (a stream counts for longer than any poll).
	waitFor(t, "the ghost to be absent", func() bool { return expectedBack(t, e, a, room, "1") < 0 })
	waitFor(t, "b to write the stream holder", func() bool { return expectedBack(t, e, a, room, "3") > 5*time.Second })

	a.setTarget(room, 2)
	res, err := a.parts.Queue.Admit(context.Background(), room, 8)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Admitted, []string{"2", "3"}; !slices.Equal(got, want) || res.Passed != 1 {
		t.Fatalf("admitted %v passed %d; want %v passed 1", got, res.Passed, want)
	}
	streamer.until(t, "READY", isReady)
	m = last.until(t, "position 3", func(_ string, m streamMsg) bool {
		pushed = append(pushed, m.Position)
		return m.Position == 3
	})
	for _, in := range []*instance{a, b} {
		mustWaitingAt(t, in, room, behind, 2)
		mustWaitingAt(t, in, room, ghost, 1) // and the ghost is seen again
	}
	for id, want := range map[string]int64{"1": 1, "4": 2, "5": 3} {
		if got := zrank(t, e, room, id); got != want {
			t.Fatalf("user%s ZRANK+1 = %d, want %d", id, got, want)
		}
	}

	// Back: once the poll is written, the next run admits the ghost first.
	waitFor(t, "the ghost's poll to be written", func() bool { return expectedBack(t, e, a, room, "1") > 0 })
	a.setTarget(room, 3)
	res, err = b.parts.Queue.Admit(context.Background(), room, 8)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Admitted, []string{"1"}; !slices.Equal(got, want) {
		t.Fatalf("admitted %v; want %v", got, want)
	}
	if r := a.position(room, ghost); r.str("status") != "READY" {
		t.Fatalf("the ghost's poll = %s, want READY", r.raw)
	}
	last.until(t, "position 2", func(_ string, m streamMsg) bool {
		pushed = append(pushed, m.Position)
		return m.Position == 2
	})
	for _, in := range []*instance{a, b} {
		mustWaitingAt(t, in, room, behind, 1)
	}
	for i := 1; i < len(pushed); i++ {
		if pushed[i] > pushed[i-1] || pushed[i] < 1 {
			t.Fatalf("user5 was pushed positions %v: one went up or below 1", pushed)
		}
	}
}

// TestReloadKeepsThePlace: a page that reloads enters again with the same
// user: the same ticket and position, and the user counts present.
func TestReloadKeepsThePlace(t *testing.T) {
	e := newEnv(t)
	in := e.start(presenceVars)
	const room = "default"
	first := in.enter(user(1), room)
	in.enter(user(2), room)
	again := in.enter(user(1), room)
	if again.num("position") != 1 || again.str("status") != "WAITING" {
		t.Fatalf("enter again = %s; want WAITING at 1", again.raw)
	}
	mustWaitingAt(t, in, room, again.str("queueToken"), 1)
	mustWaitingAt(t, in, room, first.str("queueToken"), 1)
	if expectedBack(t, e, in, room, "1") <= 0 {
		t.Fatal("a reloading user counts as absent")
	}
	in.setTarget(room, 1)
	if n := in.admit(room); n != 1 {
		t.Fatalf("admitted %d", n)
	}
	if r := in.position(room, again.str("queueToken")); r.str("status") != "READY" {
		t.Fatalf("after the reload: %s, want READY", r.raw)
	}
}

// TestAdmitPastAbsentEntrants reproduces the stall an attacker's probe
// found, at a smaller scale: 1,300 entrants who never poll (entered
// directly, their grace run out) ahead of one user who polls every 200 ms,
// in a room of targetActive 2. The poller is admitted at the first
// admission run, where admission used to look only 1000 users beyond
// the head and left them waiting until the idle timeout removed the
// crowd; the absent keep their places.
func TestAdmitPastAbsentEntrants(t *testing.T) {
	const crowd = 1300
	e := newEnv(t)
	in := e.start(presenceVars)
	const room = "default"
	ctx := context.Background()
	q := in.parts.Queue
	ghosts := make([]string, crowd)
	for i := range ghosts {
		ghosts[i] = fmt.Sprintf("ghost%d", i)
	}
	if _, errs, err := q.Enters(ctx, room, ghosts...); err != nil || slices.ContainsFunc(errs, func(err error) bool { return err != nil }) {
		t.Fatalf("enter the crowd: %v %v", err, errs)
	}
	// Their grace is over: expected back 5 s ago, well within the idle
	// timeout (1 min), so none is dropped meanwhile.
	now, err := e.rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	seen, past := q.RoomKey(room, "seen"), float64(now.Add(-5*time.Second).UnixMilli())
	if _, err := e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, g := range ghosts {
			p.ZAddXX(ctx, seen, redis.Z{Score: past, Member: g})
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	poller := in.enter(user(1), room).str("queueToken")
	keepPolling(t, in, room, poller)
	mustWaitingAt(t, in, room, poller, crowd+1)

	in.setTarget(room, 2)
	runs := 0
	for runs < 2 && in.position(room, poller).str("status") != "READY" {
		in.admit(room)
		runs++
	}
	if r := in.position(room, poller); r.str("status") != "READY" {
		t.Fatalf("after %d admission runs with 2 free slots the poller is told %s; want READY", runs, r.raw)
	}
	st, err := q.Status(ctx, room, ghosts[0])
	if err != nil || st.State != queue.Waiting || st.Position != 1 || st.Waiting != crowd {
		t.Fatalf("first absent entrant: %+v, %v; want WAITING at 1 of %d", st, err, crowd)
	}
}
