package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"waitingroom/queue"
)

// mustReady enters user into r1, admits, and returns their READY status.
func mustReady(tb testing.TB, q *queue.Queue, user string) queue.Status {
	tb.Helper()
	mustEnter(tb, q, user)
	mustAdmit(tb, q, 8)
	st, err := q.Status(context.Background(), "r1", user)
	if err != nil || st.State != queue.Ready {
		tb.Fatalf("%s after admission: %+v, %v", user, st, err)
	}
	return st
}

// TestRestoreAtMostKeepsTheWindow: a once pass's token comes back at most
// the stated number of times, with the window it had; then the restore is
// refused and the slot can be released.
func TestRestoreAtMostKeepsTheWindow(t *testing.T) {
	q, _ := mustQueue(t, 1, time.Minute)
	ctx := context.Background()
	st := mustReady(t, q, "alice")
	for i := range 2 {
		c, err := q.Consume(ctx, "r1", "alice", st.EntryToken, time.Minute)
		if err != nil {
			t.Fatalf("consume %d: %v", i, err)
		}
		if ok, err := q.RestoreAtMost(ctx, c, 2); !ok || err != nil {
			t.Fatalf("restore %d = %v, %v", i, ok, err)
		}
		again, _ := q.Status(ctx, "r1", "alice")
		if again.EntryToken != st.EntryToken || !again.EntryExpires.Equal(st.EntryExpires) {
			t.Fatalf("after restore %d: %+v, want the same token and window (%v)", i, again, st.EntryExpires)
		}
	}
	c, err := q.Consume(ctx, "r1", "alice", st.EntryToken, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := q.RestoreAtMost(ctx, c, 2); ok || !errors.Is(err, queue.ErrRestoresSpent) {
		t.Fatalf("third restore = %v, %v; want ErrRestoresSpent", ok, err)
	}
	if _, err := q.Status(ctx, "r1", "alice"); !errors.Is(err, queue.ErrNotInQueue) {
		t.Fatalf("status after the refused restore: %v, want not in queue", err)
	}
	if freed, err := q.Release(ctx, c); !freed || err != nil {
		t.Fatalf("release = %v, %v", freed, err)
	}
	// A new admission counts afresh.
	st = mustReady(t, q, "alice")
	c, _ = q.Consume(ctx, "r1", "alice", st.EntryToken, time.Minute)
	if ok, err := q.RestoreAtMost(ctx, c, 2); !ok || err != nil {
		t.Fatalf("restore after a new admission = %v, %v", ok, err)
	}
}

// TestRestoreAtMostNeverPastTheWindow: a token whose window ended while its
// request was in flight is not restored (Restore, with its grace, still
// is: the order path keeps its behaviour).
func TestRestoreAtMostNeverPastTheWindow(t *testing.T) {
	q, _ := mustQueue(t, 2, 150*time.Millisecond)
	ctx := context.Background()
	a, b := mustReady(t, q, "alice"), mustReady(t, q, "bob")
	ca, err := q.Consume(ctx, "r1", "alice", a.EntryToken, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := q.Consume(ctx, "r1", "bob", b.EntryToken, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the windows to end", func() bool { return time.Now().After(b.EntryExpires.Add(10 * time.Millisecond)) })
	if ok, err := q.RestoreAtMost(ctx, ca, 2); ok || !errors.Is(err, queue.ErrRestoresSpent) {
		t.Fatalf("restore past the window = %v, %v; want ErrRestoresSpent", ok, err)
	}
	if ok, err := q.Restore(ctx, cb, 30*time.Second); !ok || err != nil {
		t.Fatalf("Restore with grace = %v, %v", ok, err)
	}
}

// TestSessionEndsWithLeaveAndReadmission: only the user's current session
// holds; leaving ends it and frees its slot.
func TestSessionEndsWithLeaveAndReadmission(t *testing.T) {
	q, _ := mustQueue(t, 1, time.Minute)
	ctx := context.Background()
	end := time.Now().Add(time.Hour)
	st := mustReady(t, q, "alice")
	s1, err := q.ConsumeSession(ctx, "r1", "alice", st.EntryToken, "s1", "", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := q.Hold(ctx, s1, time.Minute, end, queue.SessionUse{}); !h.OK || err != nil {
		t.Fatalf("hold s1 = %+v, %v", h, err)
	}
	forged := s1
	forged.Session = "s0"
	if h, _ := q.Hold(ctx, forged, time.Minute, end, queue.SessionUse{}); h.OK {
		t.Fatal("a session id that is not the current one held")
	}
	// Admitted again (the slot freed first): the new admission's session
	// replaces the old one.
	if _, err := q.Release(ctx, s1); err != nil {
		t.Fatal(err)
	}
	st = mustReady(t, q, "alice")
	if h, _ := q.Hold(ctx, s1, time.Minute, end, queue.SessionUse{}); h.OK {
		t.Fatal("the old session held beside a new admission")
	}
	s2, err := q.ConsumeSession(ctx, "r1", "alice", st.EntryToken, "s2", "", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := q.Hold(ctx, s1, time.Minute, end, queue.SessionUse{}); h.OK {
		t.Fatal("the old session held after the new one opened")
	}
	if h, _ := q.Hold(ctx, s2, time.Minute, end, queue.SessionUse{}); !h.OK {
		t.Fatal("the new session does not hold")
	}
	res, err := q.Leave(ctx, "r1", "alice")
	if err != nil || !res.SlotFreed || res.Idle {
		t.Fatalf("leave = %+v, %v; want the session's slot freed", res, err)
	}
	if h, _ := q.Hold(ctx, s2, time.Minute, end, queue.SessionUse{}); h.OK {
		t.Fatal("the session held after leave")
	}
	if info, _ := q.Room(ctx, "r1"); info.Active != 0 {
		t.Fatalf("active after leave = %d, want 0", info.Active)
	}
}

// TestHoldPacesASession: a session's requests beyond its burst are
// refused with the time to wait, without touching another user's session;
// a session bound to a network refuses another one.
func TestHoldPacesASession(t *testing.T) {
	q, _ := mustQueue(t, 2, time.Minute)
	ctx := context.Background()
	end := time.Now().Add(time.Hour)
	a, b := mustReady(t, q, "alice"), mustReady(t, q, "bob")
	sa, err := q.ConsumeSession(ctx, "r1", "alice", a.EntryToken, "sa", "10.1.2.0/24", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := q.ConsumeSession(ctx, "r1", "bob", b.EntryToken, "sb", "", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	use := queue.SessionUse{Rate: 1, Burst: 3, Network: "10.1.2.0/24"}
	for i := range 3 {
		if h, err := q.Hold(ctx, sa, time.Minute, end, use); !h.OK || h.Limited || err != nil {
			t.Fatalf("request %d within the burst: %+v, %v", i, h, err)
		}
	}
	h, err := q.Hold(ctx, sa, time.Minute, end, use)
	if err != nil || !h.OK || !h.Limited || h.RetryAfter <= 0 || h.RetryAfter > time.Second {
		t.Fatalf("request past the burst: %+v, %v; want limited for at most a second", h, err)
	}
	if h, _ := q.Hold(ctx, sb, time.Minute, end, queue.SessionUse{Rate: 1, Burst: 3}); !h.OK || h.Limited {
		t.Fatalf("another session: %+v, want held", h)
	}
	if h, _ := q.Hold(ctx, sa, time.Minute, end, queue.SessionUse{Network: "10.1.3.0/24"}); !h.Elsewhere {
		t.Fatalf("from another network: %+v, want Elsewhere", h)
	}
	if h, _ := q.Hold(ctx, sa, time.Minute, end, queue.SessionUse{}); !h.OK || h.Elsewhere || h.Limited {
		t.Fatalf("network not checked, no rate: %+v", h)
	}
}
