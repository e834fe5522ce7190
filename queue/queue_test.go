package queue_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue"
	"waitingroom/queue/queuetest"
)

// mustQueue is a queue with one room, "r1" (queuetest.Queue).
var mustQueue = queuetest.Queue

// The shared helpers, under the names these tests use.
var (
	mustEnter = queuetest.Enter
	mustAdmit = queuetest.Admit
	waitFor   = queuetest.WaitFor
)

func TestEnterKeepsFirstPlace(t *testing.T) {
	q, _ := mustQueue(t, 0, time.Minute)
	a := mustEnter(t, q, "alice")
	b := mustEnter(t, q, "bob")
	again := mustEnter(t, q, "alice")
	if !a.New || !b.New || again.New {
		t.Fatalf("New flags: alice %v, bob %v, alice again %v", a.New, b.New, again.New)
	}
	if again.Ticket != a.Ticket || again.Position != 1 {
		t.Fatalf("re-enter: ticket %d position %d, want ticket %d position 1", again.Ticket, again.Position, a.Ticket)
	}
	if b.Position != 2 || b.Waiting != 2 || again.Waiting != 2 {
		t.Fatalf("bob position %d waiting %d; alice waiting %d", b.Position, b.Waiting, again.Waiting)
	}
	st, err := q.Status(context.Background(), "r1", "bob")
	if err != nil || st.State != queue.Waiting || st.Position != 2 || st.Ticket != b.Ticket {
		t.Fatalf("status bob = %+v, %v", st, err)
	}
}

func TestConcurrentEntersAreAdmittedInTicketOrder(t *testing.T) {
	const n = 1000
	q, _ := mustQueue(t, n, time.Minute)
	ctx := context.Background()
	tickets := make([]int64, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			st, err := q.Enter(ctx, "r1", "u"+strconv.Itoa(i))
			if err != nil {
				errs <- err
				return
			}
			tickets[i] = st.Ticket
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for _, tk := range tickets {
		if seen[tk] {
			t.Fatalf("ticket %d issued twice", tk)
		}
		seen[tk] = true
	}
	// Admit in small batches and check the pop order is ticket order.
	var order []string
	for len(order) < n {
		res := mustAdmit(t, q, 37)
		if len(res.Admitted) == 0 {
			t.Fatalf("admission stalled after %d users", len(order))
		}
		order = append(order, res.Admitted...)
	}
	for i := 1; i < len(order); i++ {
		prev, _ := strconv.Atoi(order[i-1][1:])
		cur, _ := strconv.Atoi(order[i][1:])
		if tickets[prev] >= tickets[cur] {
			t.Fatalf("FIFO inversion: %s (ticket %d) admitted before %s (ticket %d)", order[i-1], tickets[prev], order[i], tickets[cur])
		}
	}
}

func TestConcurrentAdmittersNeverExceedTarget(t *testing.T) {
	const target, users = 7, 400
	q, _ := mustQueue(t, target, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range users {
		mustEnter(t, q, "u"+strconv.Itoa(i))
	}
	var admitted, ordered atomic.Int64
	var wg sync.WaitGroup
	// Two admission loops and one "order" worker that spends tokens and
	// releases slots, so capacity keeps reopening while they race.
	for range 2 {
		wg.Go(func() {
			for ctx.Err() == nil {
				res, err := q.Admit(ctx, "r1", 5)
				if err != nil {
					return
				}
				admitted.Add(int64(len(res.Admitted)))
				if res.Active > target {
					t.Errorf("admit reported active %d > target %d", res.Active, target)
				}
			}
		})
	}
	wg.Go(func() {
		// Admission is in ticket order, so the users READY are among the
		// first of those not yet served: each pass looks at 2×target of
		// them (not all 400, which under load made the test slow).
		pending := make([]string, users)
		for i := range pending {
			pending[i] = "u" + strconv.Itoa(i)
		}
		for i := 0; ctx.Err() == nil && len(pending) > 0; i++ {
			if i >= min(len(pending), 2*target) {
				i = 0
			}
			user := pending[i]
			st, err := q.Status(ctx, "r1", user)
			if err != nil || st.State != queue.Ready {
				continue
			}
			pending = slices.Delete(pending, i, i+1)
			i--
			c, err := q.Consume(ctx, "r1", user, st.EntryToken, time.Minute)
			if err != nil {
				t.Errorf("consume %s: %v", user, err)
				return
			}
			if _, err := q.Release(ctx, c); err != nil {
				t.Errorf("release: %v", err)
				return
			}
			ordered.Add(1)
		}
	})
	// Sample until everyone has ordered; the test fails on a stall (no
	// order for 10 s), not on a slow machine.
	var samples, maxActive int64
	last, lastAt := int64(-1), time.Now()
	for ordered.Load() < users {
		info, err := q.Room(ctx, "r1")
		if err != nil {
			t.Fatal(err)
		}
		samples++
		maxActive = max(maxActive, info.Active)
		if info.Active > target {
			t.Fatalf("sampled active %d > target %d", info.Active, target)
		}
		if n := ordered.Load(); n != last {
			last, lastAt = n, time.Now()
		} else if time.Since(lastAt) > 10*time.Second {
			t.Fatalf("no order for 10 s: %d of %d ordered, %d admitted", n, users, admitted.Load())
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	wg.Wait()
	if got := admitted.Load(); got != users {
		t.Fatalf("admitted %d users, want %d", got, users)
	}
	t.Logf("%d samples, max active %d (target %d)", samples, maxActive, target)
}

func TestAdmittedUserSeesReadyNeverNotInQueue(t *testing.T) {
	const users = 200
	q, _ := mustQueue(t, users, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range users {
		mustEnter(t, q, "u"+strconv.Itoa(i))
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			if _, err := q.Admit(ctx, "r1", 3); err != nil {
				return
			}
		}
	})
	var ready atomic.Int64
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < users; i += 4 {
				user := "u" + strconv.Itoa(i)
				for {
					st, err := q.Status(ctx, "r1", user)
					if err != nil {
						t.Errorf("status %s: %v (a user between waiting and ready must never be missing)", user, err)
						return
					}
					if st.State == queue.Ready {
						ready.Add(1)
						break
					}
				}
			}
		})
	}
	waitFor(t, "every user READY", func() bool { return ready.Load() == users || t.Failed() })
	cancel()
	wg.Wait()
}

func TestEntryTokenIsSpentOnce(t *testing.T) {
	q, _ := mustQueue(t, 5, time.Minute)
	ctx := context.Background()
	mustEnter(t, q, "alice")
	mustEnter(t, q, "bob")
	mustAdmit(t, q, 8)
	alice, err := q.Status(ctx, "r1", "alice")
	if err != nil || alice.State != queue.Ready {
		t.Fatalf("alice = %+v, %v", alice, err)
	}
	if _, err := q.Consume(ctx, "r1", "bob", alice.EntryToken, time.Minute); !errors.Is(err, queue.ErrEntryTokenInvalid) {
		t.Fatalf("bob spending alice's token: err = %v, want ErrEntryTokenInvalid", err)
	}
	var ok atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			_, err := q.Consume(ctx, "r1", "alice", alice.EntryToken, time.Minute)
			switch {
			case err == nil:
				ok.Add(1)
			case !errors.Is(err, queue.ErrEntryTokenInvalid):
				t.Errorf("consume: %v", err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 1 {
		t.Fatalf("%d consumes succeeded, want exactly 1", ok.Load())
	}
	// Bob's token is untouched by the wrong attempt.
	bob, err := q.Status(ctx, "r1", "bob")
	if err != nil || bob.State != queue.Ready {
		t.Fatalf("bob = %+v, %v", bob, err)
	}
}

func TestRestoreAndRelease(t *testing.T) {
	q, _ := mustQueue(t, 1, time.Minute)
	ctx := context.Background()
	mustEnter(t, q, "alice")
	mustEnter(t, q, "bob")
	mustAdmit(t, q, 8)
	st, _ := q.Status(ctx, "r1", "alice")
	c, err := q.Consume(ctx, "r1", "alice", st.EntryToken, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// In flight: the slot is still taken, nobody else is admitted.
	if res := mustAdmit(t, q, 8); len(res.Admitted) != 0 || res.Active != 1 {
		t.Fatalf("admit during in-flight order = %+v, want nobody admitted and active 1", res)
	}
	if _, err := q.Status(ctx, "r1", "alice"); !errors.Is(err, queue.ErrNotInQueue) {
		t.Fatalf("status during in-flight order: %v, want ErrNotInQueue", err)
	}
	restored, err := q.Restore(ctx, c, 30*time.Second)
	if err != nil || !restored {
		t.Fatalf("restore = %v, %v", restored, err)
	}
	again, err := q.Status(ctx, "r1", "alice")
	if err != nil || again.State != queue.Ready || again.EntryToken != st.EntryToken {
		t.Fatalf("after restore status = %+v, %v; want READY with the same token", again, err)
	}
	if !again.EntryExpires.Equal(st.EntryExpires) {
		t.Fatalf("restore moved the window from %v to %v", st.EntryExpires, again.EntryExpires)
	}
	c, err = q.Consume(ctx, "r1", "alice", st.EntryToken, time.Minute)
	if err != nil {
		t.Fatalf("retry with the restored token: %v", err)
	}
	freed, err := q.Release(ctx, c)
	if err != nil || !freed {
		t.Fatalf("release = %v, %v", freed, err)
	}
	if res := mustAdmit(t, q, 8); !slices.Equal(res.Admitted, []string{"bob"}) {
		t.Fatalf("after release admitted %v, want [bob]", res.Admitted)
	}
	// A second release of the same claim frees nothing (bob holds the slot).
	if freed, _ := q.Release(ctx, c); freed {
		t.Fatal("second release freed a slot")
	}
}

func TestExpiredEntryWindowReturnsCapacity(t *testing.T) {
	q, _ := mustQueue(t, 1, 150*time.Millisecond)
	ctx := context.Background()
	mustEnter(t, q, "alice")
	mustEnter(t, q, "bob")
	if res := mustAdmit(t, q, 8); !slices.Equal(res.Admitted, []string{"alice"}) {
		t.Fatalf("admitted %v, want [alice]", res.Admitted)
	}
	st, _ := q.Status(ctx, "r1", "alice")
	waitFor(t, "alice's window to end", func() bool {
		_, err := q.Status(ctx, "r1", "alice")
		return errors.Is(err, queue.ErrNotInQueue)
	})
	if _, err := q.Consume(ctx, "r1", "alice", st.EntryToken, time.Minute); !errors.Is(err, queue.ErrEntryTokenInvalid) {
		t.Fatalf("consume after window: %v, want ErrEntryTokenInvalid", err)
	}
	res := mustAdmit(t, q, 8)
	if res.Pruned != 1 || !slices.Equal(res.Admitted, []string{"bob"}) || res.Active != 1 {
		t.Fatalf("admit after expiry = %+v, want alice pruned and bob admitted", res)
	}
	info, _ := q.Room(ctx, "r1")
	if info.Expired != 1 || info.Admitted != 2 {
		t.Fatalf("counters: expired %d admitted %d", info.Expired, info.Admitted)
	}
	// Entering again after expiry gives a fresh ticket at the back.
	again := mustEnter(t, q, "alice")
	if !again.New || again.State != queue.Waiting {
		t.Fatalf("re-enter after expiry = %+v", again)
	}
}

func TestLeave(t *testing.T) {
	q, _ := mustQueue(t, 1, time.Minute)
	ctx := context.Background()
	mustEnter(t, q, "alice")
	mustEnter(t, q, "bob")
	mustEnter(t, q, "carol")
	mustAdmit(t, q, 8) // alice READY
	res, err := q.Leave(ctx, "r1", "bob")
	if err != nil || !res.WasWaiting || res.SlotFreed {
		t.Fatalf("bob leaves = %+v, %v", res, err)
	}
	if st, _ := q.Status(ctx, "r1", "carol"); st.Position != 1 {
		t.Fatalf("carol position %d after bob left, want 1", st.Position)
	}
	res, err = q.Leave(ctx, "r1", "alice")
	if err != nil || res.WasWaiting || !res.SlotFreed {
		t.Fatalf("alice leaves = %+v, %v", res, err)
	}
	if got := mustAdmit(t, q, 8).Admitted; !slices.Equal(got, []string{"carol"}) {
		t.Fatalf("admitted %v after alice left, want [carol]", got)
	}
}

func TestPausedAndMissingRooms(t *testing.T) {
	q, _ := mustQueue(t, 5, time.Minute)
	ctx := context.Background()
	mustEnter(t, q, "alice")
	paused := true
	if _, err := q.UpdateRoom(ctx, "r1", queue.RoomUpdate{Paused: &paused}, false, queue.RoomConfig{}); err != nil {
		t.Fatal(err)
	}
	if st, err := q.Enter(ctx, "r1", "bob"); err != nil || st.State != queue.Waiting || !st.Paused || st.Position != 2 {
		t.Fatalf("enter paused room = %+v, %v; want WAITING at 2, paused (pause_test.go)", st, err)
	}
	if st := mustEnter(t, q, "alice"); st.State != queue.Waiting || st.Position != 1 {
		t.Fatalf("alice re-entering a paused room keeps her place, got %+v", st)
	}
	if res := mustAdmit(t, q, 8); len(res.Admitted) != 0 || !res.Paused {
		t.Fatalf("paused room admitted %v", res.Admitted)
	}
	paused = false
	if _, err := q.UpdateRoom(ctx, "r1", queue.RoomUpdate{Paused: &paused}, false, queue.RoomConfig{}); err != nil {
		t.Fatal(err)
	}
	if res := mustAdmit(t, q, 8); !slices.Equal(res.Admitted, []string{"alice", "bob"}) {
		t.Fatalf("resumed room admitted %v, want [alice bob]", res.Admitted)
	}
	for _, room := range []string{"nope", "{bad}", "", "UPPER"} {
		if _, err := q.Enter(ctx, room, "alice"); !errors.Is(err, queue.ErrRoomNotFound) {
			t.Errorf("enter %q: %v, want ErrRoomNotFound", room, err)
		}
	}
	if _, err := q.UpdateRoom(ctx, "nope", queue.RoomUpdate{}, false, queue.RoomConfig{}); !errors.Is(err, queue.ErrRoomNotFound) {
		t.Fatalf("update missing room: %v", err)
	}
}

func TestAdmitPublishesOneEvent(t *testing.T) {
	q, rdb := mustQueue(t, 3, time.Minute)
	ctx := context.Background()
	sub := rdb.Subscribe(ctx, eventChannel(q, "r1"))
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // subscription confirmed
		t.Fatal(err)
	}
	for i := range 5 {
		mustEnter(t, q, fmt.Sprint("u", i))
	}
	mustAdmit(t, q, 8)
	// The first enter woke the room (one event); the four after it
	// published nothing; the admission run publishes one.
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg.Payload, `"waiting":1`) || strings.Contains(msg.Payload, "admitted") {
		t.Fatalf("first event %s: want the first arrival's (waiting 1)", msg.Payload)
	}
	if msg, err = sub.ReceiveMessage(ctx); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"admitted":["u0","u1","u2"]`, `"waiting":2`, `"active":3`, `"room":"r1"`} {
		if !strings.Contains(msg.Payload, want) {
			t.Errorf("event %s lacks %s", msg.Payload, want)
		}
	}
}

func TestTargetChangeAppliesNextTick(t *testing.T) {
	q, _ := mustQueue(t, 2, time.Minute)
	ctx := context.Background()
	for i := range 10 {
		mustEnter(t, q, fmt.Sprint("u", i))
	}
	if got := len(mustAdmit(t, q, 8).Admitted); got != 2 {
		t.Fatalf("admitted %d, want 2", got)
	}
	target := int64(6)
	if _, err := q.UpdateRoom(ctx, "r1", queue.RoomUpdate{Target: &target}, false, queue.RoomConfig{}); err != nil {
		t.Fatal(err)
	}
	if got := mustAdmit(t, q, 8); len(got.Admitted) != 4 || got.Active != 6 {
		t.Fatalf("after target 6: admitted %d active %d, want 4 and 6", len(got.Admitted), got.Active)
	}
}

func TestRedisDownIsUnavailable(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer rdb.Close()
	q := queue.New(rdb, queue.Options{Prefix: queuetest.Prefix()})
	ctx := context.Background()
	checks := map[string]error{}
	_, checks["enter"] = q.Enter(ctx, "r1", "alice")
	_, checks["status"] = q.Status(ctx, "r1", "alice")
	_, checks["admit"] = q.Admit(ctx, "r1", 1)
	_, checks["consume"] = q.Consume(ctx, "r1", "alice", "tok", time.Second)
	_, checks["leave"] = q.Leave(ctx, "r1", "alice")
	for op, err := range checks {
		if !errors.Is(err, queue.ErrUnavailable) {
			t.Errorf("%s with Redis down: %v, want ErrUnavailable", op, err)
		}
	}
}

func TestAbandonedUsersAreRemoved(t *testing.T) {
	// The idle timeout is the margin the touched users have between their
	// touch and the admission that judges them: a test that touched them
	// every 50 ms within 300 ms failed when a busy machine stalled it for
	// longer than that.
	const idle = 2 * time.Second
	rdb, prefix := queuetest.Redis(t)
	q := queue.New(rdb, queue.Options{Prefix: prefix, IdleTimeout: idle})
	ctx := context.Background()
	if err := q.EnsureRoom(ctx, "r1", queue.RoomConfig{Target: 0, EntryTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"gone1", "here", "gone2", "behind"} {
		mustEnter(t, q, u)
	}
	// Every user is idle past the timeout (what passes is the time itself,
	// no condition to await), then "here" polls and "behind" holds a
	// stream: both are touched; the others are never seen again.
	time.Sleep(idle + 100*time.Millisecond)
	if err := q.Touch(ctx, "r1", []string{"here", "behind"}, 0); err != nil {
		t.Fatal(err)
	}
	res, err := q.Admit(ctx, "r1", 8)
	if err != nil {
		t.Fatal(err)
	}
	if res.Abandoned != 2 || res.Waiting != 2 {
		t.Fatalf("admit = %+v, want 2 abandoned and 2 still waiting", res)
	}
	if st, _ := q.Status(ctx, "r1", "behind"); st.Position != 2 {
		t.Fatalf("behind at %d, want 2", st.Position)
	}
	if _, err := q.Status(ctx, "r1", "gone1"); !errors.Is(err, queue.ErrNotInQueue) {
		t.Fatalf("abandoned user status: %v", err)
	}
	if info, _ := q.Room(ctx, "r1"); info.Abandoned != 2 {
		t.Fatalf("abandoned counter = %d", info.Abandoned)
	}
	// Entering again is a fresh ticket at the back.
	if st := mustEnter(t, q, "gone1"); !st.New || st.Position != 3 {
		t.Fatalf("re-enter after abandoning = %+v", st)
	}
}

// TestHoldKeepsASessionsSlot: a consumed token that opened a session keeps
// its slot while held, never past the session's end, and not once the
// slot is released or the user admitted again.
func TestHoldKeepsASessionsSlot(t *testing.T) {
	q, _ := mustQueue(t, 1, time.Minute)
	ctx := context.Background()
	mustEnter(t, q, "alice")
	mustEnter(t, q, "bob")
	mustAdmit(t, q, 8)
	st, _ := q.Status(ctx, "r1", "alice")
	c, err := q.ConsumeSession(ctx, "r1", "alice", st.EntryToken, "s1", "", 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(time.Hour)
	h, err := q.Hold(ctx, c, 10*time.Minute, end, queue.SessionUse{})
	if err != nil || !h.OK || time.Until(h.Deadline) < 9*time.Minute || h.Deadline.After(end) {
		t.Fatalf("hold = %+v, %v; want a deadline about 10 min away", h, err)
	}
	// Held past the in-flight allowance: still active, bob still waits.
	time.Sleep(300 * time.Millisecond)
	if res := mustAdmit(t, q, 8); len(res.Admitted) != 0 || res.Active != 1 {
		t.Fatalf("admit while held = %+v, want nobody admitted and active 1", res)
	}
	// Capped by the session's end.
	soon := time.Now().Add(2 * time.Second)
	if h, _ := q.Hold(ctx, c, 10*time.Minute, soon, queue.SessionUse{}); !h.OK || h.Deadline.After(soon.Add(time.Millisecond)) {
		t.Fatalf("hold capped at %v = %+v", soon, h)
	}
	// An end already past: no longer held.
	if h, _ := q.Hold(ctx, c, time.Minute, time.Now().Add(-time.Second), queue.SessionUse{}); h.OK {
		t.Fatal("held past the session's end")
	}
	if _, err := q.Release(ctx, c); err != nil {
		t.Fatal(err)
	}
	if h, _ := q.Hold(ctx, c, time.Minute, end, queue.SessionUse{}); h.OK {
		t.Fatal("held after release")
	}
	if h, _ := q.Hold(ctx, queue.Claim{Room: "{bad", User: "alice", Session: "s1"}, time.Minute, end, queue.SessionUse{}); h.OK {
		t.Fatal("held in an invalid room")
	}
}
