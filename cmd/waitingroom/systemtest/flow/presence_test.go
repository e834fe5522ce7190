package flow

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/queue"
)

// presenceVars run instances whose one poll band is 500 ms, so a poller
// counts present for 2.5 s after a poll (presence.Grace) and a user who
// entered and never polled is absent 2.5 s later; admission is driven by
// the test (admit), the presence flusher runs on its own.
var presenceVars = map[string]string{"WR_TARGET_ACTIVE": "0", "WR_POLL_BANDS": "*:500ms", "WR_IDLE_TIMEOUT": "1m"}

// keepPolling polls with each token every 200 ms until the test ends, as
// open pages do.
func keepPolling(t *testing.T, in *systemtest.Instance, room string, tokens ...string) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			for _, tok := range tokens {
				req, _ := http.NewRequest("GET", in.Base+"/api/v1/rooms/"+room+"/position", nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				if res, err := systemtest.Client.Do(req); err == nil {
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
func expectedBack(t *testing.T, e *systemtest.Env, in *systemtest.Instance, room, userID string) time.Duration {
	t.Helper()
	ctx := context.Background()
	due, err := e.Redis.ZScore(ctx, in.Parts.Queue.RoomKey(room, "seen"), userID).Result()
	if err != nil {
		t.Fatalf("seen score of %s: %v", userID, err)
	}
	now, err := e.Redis.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	return time.UnixMilli(int64(due)).Sub(now)
}

// mustWaitingAt polls token on in and checks it waits at pos.
func mustWaitingAt(t *testing.T, in *systemtest.Instance, room, token string, pos int64) {
	t.Helper()
	r := in.Position(room, token)
	if r.Status != 200 || r.Str("status") != "WAITING" || r.Num("position") != pos {
		t.Fatalf("poll = %d %s; want WAITING at %d", r.Status, r.Raw, pos)
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
	systemtest.LongScenario(t)
	e := systemtest.NewEnv(t)
	a := e.Start(presenceVars)
	b := e.Start(presenceVars)
	const room = "default"

	ghost := a.Enter(systemtest.User(1), room).Str("queueToken") // never seen again, for now
	poller := a.Enter(systemtest.User(2), room).Str("queueToken")
	streamer := systemtest.OpenSSE(t, b, room, a.Enter(systemtest.User(3), room).Str("queueToken"))
	behind := a.Enter(systemtest.User(4), room).Str("queueToken")
	last := systemtest.OpenSSE(t, b, room, a.Enter(systemtest.User(5), room).Str("queueToken"))
	keepPolling(t, a, room, poller, behind)
	if _, m := streamer.Next(t); m.Position != 3 {
		t.Fatalf("the stream holder starts at %d", m.Position)
	}
	_, m := last.Next(t)
	pushed := []int64{m.Position}

	// The ghost's grace passes; the stream holder's presence is written by
	// b's flusher (a stream counts for longer than any poll).
	systemtest.WaitFor(t, "the ghost to be absent", func() bool { return expectedBack(t, e, a, room, "1") < 0 })
	systemtest.WaitFor(t, "b to write the stream holder", func() bool { return expectedBack(t, e, a, room, "3") > 5*time.Second })

	a.SetTarget(room, 2)
	res, err := a.Parts.Queue.Admit(context.Background(), room, 8)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Admitted, []string{"2", "3"}; !slices.Equal(got, want) || res.Passed != 1 {
		t.Fatalf("admitted %v passed %d; want %v passed 1", got, res.Passed, want)
	}
	streamer.Until(t, "READY", systemtest.IsReady)
	m = last.Until(t, "position 3", func(_ string, m systemtest.StreamMsg) bool {
		pushed = append(pushed, m.Position)
		return m.Position == 3
	})
	for _, in := range []*systemtest.Instance{a, b} {
		mustWaitingAt(t, in, room, behind, 2)
		mustWaitingAt(t, in, room, ghost, 1) // and the ghost is seen again
	}
	for id, want := range map[string]int64{"1": 1, "4": 2, "5": 3} {
		if got := systemtest.Zrank(t, e, room, id); got != want {
			t.Fatalf("user%s ZRANK+1 = %d, want %d", id, got, want)
		}
	}

	// Back: once the poll is written, the next run admits the ghost first.
	systemtest.WaitFor(t, "the ghost's poll to be written", func() bool { return expectedBack(t, e, a, room, "1") > 0 })
	a.SetTarget(room, 3)
	res, err = b.Parts.Queue.Admit(context.Background(), room, 8)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Admitted, []string{"1"}; !slices.Equal(got, want) {
		t.Fatalf("admitted %v; want %v", got, want)
	}
	if r := a.Position(room, ghost); r.Str("status") != "READY" {
		t.Fatalf("the ghost's poll = %s, want READY", r.Raw)
	}
	last.Until(t, "position 2", func(_ string, m systemtest.StreamMsg) bool {
		pushed = append(pushed, m.Position)
		return m.Position == 2
	})
	for _, in := range []*systemtest.Instance{a, b} {
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
	e := systemtest.NewEnv(t)
	in := e.Start(presenceVars)
	const room = "default"
	first := in.Enter(systemtest.User(1), room)
	in.Enter(systemtest.User(2), room)
	again := in.Enter(systemtest.User(1), room)
	if again.Num("position") != 1 || again.Str("status") != "WAITING" {
		t.Fatalf("enter again = %s; want WAITING at 1", again.Raw)
	}
	mustWaitingAt(t, in, room, again.Str("queueToken"), 1)
	mustWaitingAt(t, in, room, first.Str("queueToken"), 1)
	if expectedBack(t, e, in, room, "1") <= 0 {
		t.Fatal("a reloading user counts as absent")
	}
	in.SetTarget(room, 1)
	if n := in.Admit(room); n != 1 {
		t.Fatalf("admitted %d", n)
	}
	if r := in.Position(room, again.Str("queueToken")); r.Str("status") != "READY" {
		t.Fatalf("after the reload: %s, want READY", r.Raw)
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
	e := systemtest.NewEnv(t)
	in := e.Start(presenceVars)
	const room = "default"
	ctx := context.Background()
	q := in.Parts.Queue
	ghosts := make([]string, crowd)
	for i := range ghosts {
		ghosts[i] = fmt.Sprintf("ghost%d", i)
	}
	if _, errs, err := q.Enters(ctx, room, ghosts...); err != nil || slices.ContainsFunc(errs, func(err error) bool { return err != nil }) {
		t.Fatalf("enter the crowd: %v %v", err, errs)
	}
	// Their grace is over: expected back 5 s ago, well within the idle
	// timeout (1 min), so none is dropped meanwhile.
	now, err := e.Redis.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	seen, past := q.RoomKey(room, "seen"), float64(now.Add(-5*time.Second).UnixMilli())
	if _, err := e.Redis.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, g := range ghosts {
			p.ZAddXX(ctx, seen, redis.Z{Score: past, Member: g})
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	poller := in.Enter(systemtest.User(1), room).Str("queueToken")
	keepPolling(t, in, room, poller)
	mustWaitingAt(t, in, room, poller, crowd+1)

	in.SetTarget(room, 2)
	runs := 0
	for runs < 2 && in.Position(room, poller).Str("status") != "READY" {
		in.Admit(room)
		runs++
	}
	if r := in.Position(room, poller); r.Str("status") != "READY" {
		t.Fatalf("after %d admission runs with 2 free slots the poller is told %s; want READY", runs, r.Raw)
	}
	st, err := q.Status(ctx, room, ghosts[0])
	if err != nil || st.State != queue.Waiting || st.Position != 1 || st.Waiting != crowd {
		t.Fatalf("first absent entrant: %+v, %v; want WAITING at 1 of %d", st, err, crowd)
	}
}
