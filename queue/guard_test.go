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

// testDecision is one call of testGuard: its keys, its argument, and a
// refusal read as a guardRefused carrying the reply as it came.
type testDecision struct {
	keys []string
	arg  string
}

func (d testDecision) Keys() []string { return d.keys }
func (d testDecision) Args() []any    { return []any{d.arg} }
func (d testDecision) Refusal(reply []any) error {
	return &guardRefused{reply: reply}
}

type guardRefused struct{ reply []any }

func (*guardRefused) Error() string { return "refused by the test guard" }

// TestEnterGuarded: the guard runs inside the enter script on the keys and
// arguments appended to the enter's own; when it refuses nobody enters and
// its reply comes back as it is, read by the Guard; when it allows, the
// enter is Enter's.
func TestEnterGuarded(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := queuetest.Redis(t)
	q := queue.New(rdb, queue.Options{Prefix: prefix, EnterGuard: testGuard})
	if err := q.EnsureRoom(ctx, "r1", queue.RoomConfig{Target: 0, EntryTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	block, passed := prefix+"guard:block", prefix+"guard:passed"
	keys := []string{block, passed}
	closed, open := testDecision{keys, "closed"}, testDecision{keys, "open"}
	st, err := q.EnterGuarded(ctx, "r1", "u1", closed)
	if err != nil || st.State != queue.Waiting || st.Position != 1 || !st.New {
		t.Fatalf("allowed enter = %+v, %v; want u1 waiting at 1", st, err)
	}
	if err := rdb.Set(ctx, block, "closed", 0).Err(); err != nil {
		t.Fatal(err)
	}
	st, err = q.EnterGuarded(ctx, "r1", "u2", closed)
	var refused *guardRefused
	if !errors.As(err, &refused) || len(refused.reply) != 2 || refused.reply[0] != block || refused.reply[1] != "closed" || st != (queue.Status{}) {
		t.Fatalf("refused enter = %+v, %v; want the guard's reply {%s closed}", st, err, block)
	}
	if _, err := q.Status(ctx, "r1", "u2"); !errors.Is(err, queue.ErrNotInQueue) {
		t.Fatalf("a refused user's status: %v, want not in the queue", err)
	}
	if n, err := rdb.Get(ctx, passed).Int(); err != nil || n != 1 {
		t.Fatalf("the guard let %d through (%v), want 1", n, err)
	}
	// Allowed again, the user after u1 comes second; the room's refusals
	// come after the guard's decision.
	st, err = q.EnterGuarded(ctx, "r1", "u3", open)
	if err != nil || st.Position != 2 {
		t.Fatalf("enter after the refusal = %+v, %v; want u3 at 2", st, err)
	}
	if _, err := q.EnterGuarded(ctx, "nope", "u4", open); !errors.Is(err, queue.ErrRoomNotFound) {
		t.Fatalf("enter of a missing room: %v, want ErrRoomNotFound", err)
	}
	if n, _ := rdb.Get(ctx, passed).Int(); n != 3 {
		t.Fatalf("the guard let %d through, want 3 (its decision stands when the room is missing)", n)
	}
	plain := queue.New(rdb, queue.Options{Prefix: prefix})
	if _, err := plain.EnterGuarded(ctx, "r1", "u5", open); !errors.Is(err, queue.ErrNoGuard) {
		t.Fatalf("EnterGuarded without a guard: %v, want ErrNoGuard", err)
	}
}
