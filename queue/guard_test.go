package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"waitingroom/queue"
	"waitingroom/queue/queuetest"
)

// testGuard refuses when its key holds its argument, replying both back,
// and records each call it lets through by incrementing its second key.
const testGuard = `
local function guard(k0, a0)
  if redis.call('GET', KEYS[k0]) == ARGV[a0] then
    return {KEYS[k0], ARGV[a0]}
  end
  redis.call('INCR', KEYS[k0 + 1])
  return nil
end
`

// TestEnterGuarded: the guard runs inside the enter script on the keys and
// arguments appended to the enter's own; when it refuses nobody enters and
// its reply comes back as it is; when it allows, the enter is Enter's.
func TestEnterGuarded(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := queuetest.Redis(t)
	q := queue.New(rdb, queue.Options{Prefix: prefix, EnterGuard: testGuard})
	if err := q.EnsureRoom(ctx, "r1", queue.RoomConfig{Target: 0, EntryTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	block, passed := prefix+"guard:block", prefix+"guard:passed"
	keys := []string{block, passed}
	st, refused, err := q.EnterGuarded(ctx, "r1", "u1", keys, "closed")
	if err != nil || refused != nil || st.State != queue.Waiting || st.Position != 1 || !st.New {
		t.Fatalf("allowed enter = %+v, refused %v, %v; want u1 waiting at 1", st, refused, err)
	}
	if err := rdb.Set(ctx, block, "closed", 0).Err(); err != nil {
		t.Fatal(err)
	}
	st, refused, err = q.EnterGuarded(ctx, "r1", "u2", keys, "closed")
	if err != nil || len(refused) != 2 || refused[0] != block || refused[1] != "closed" || st != (queue.Status{}) {
		t.Fatalf("refused enter = %+v, refused %v, %v; want the guard's reply {%s closed}", st, refused, err, block)
	}
	if _, err := q.Status(ctx, "r1", "u2"); !errors.Is(err, queue.ErrNotInQueue) {
		t.Fatalf("a refused user's status: %v, want not in the queue", err)
	}
	if n, err := rdb.Get(ctx, passed).Int(); err != nil || n != 1 {
		t.Fatalf("the guard let %d through (%v), want 1", n, err)
	}
	// Allowed again, the user after u1 comes second; the room's refusals
	// come after the guard's decision.
	st, refused, err = q.EnterGuarded(ctx, "r1", "u3", keys, "open")
	if err != nil || refused != nil || st.Position != 2 {
		t.Fatalf("enter after the refusal = %+v, refused %v, %v; want u3 at 2", st, refused, err)
	}
	if _, _, err := q.EnterGuarded(ctx, "nope", "u4", keys, "open"); !errors.Is(err, queue.ErrRoomNotFound) {
		t.Fatalf("enter of a missing room: %v, want ErrRoomNotFound", err)
	}
	if n, _ := rdb.Get(ctx, passed).Int(); n != 3 {
		t.Fatalf("the guard let %d through, want 3 (its decision stands when the room is missing)", n)
	}
	plain := queue.New(rdb, queue.Options{Prefix: prefix})
	if _, _, err := plain.EnterGuarded(ctx, "r1", "u5", keys, "open"); !errors.Is(err, queue.ErrNoGuard) {
		t.Fatalf("EnterGuarded without a guard: %v, want ErrNoGuard", err)
	}
}
