package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue"
	"waitingroom/queue/queuetest"
)

// onDB is a queue with room "r1" on database db of the test Redis, under
// prefix; its keys there go when the test ends.
func onDB(t *testing.T, db int, prefix string) *queue.Queue {
	t.Helper()
	opt, err := redis.ParseURL(queuetest.URL())
	if err != nil {
		t.Fatal(err)
	}
	opt.DB = db
	rdb := redis.NewClient(opt)
	ctx := context.Background()
	t.Cleanup(func() {
		keys, _ := rdb.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
		_ = rdb.Close()
	})
	q := queue.New(rdb, queue.Options{Prefix: prefix})
	if err := q.EnsureRoom(ctx, "r1", queue.RoomConfig{Target: 5, EntryTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	return q
}

// TestEventsStayInTheirDatabase: two deployments on one Redis, on
// databases 0 and 1 with the same key prefix, do not hear each other's
// room events (pub/sub ignores the database number); database 0's
// channels keep their names.
func TestEventsStayInTheirDatabase(t *testing.T) {
	prefix := queuetest.Prefix()
	q0, q1 := onDB(t, 0, prefix), onDB(t, 1, prefix)
	if got, want := q0.EventChannel("r1"), q0.RoomKey("r1", "events"); got != want {
		t.Fatalf("database 0's channel = %q, want %q (the name earlier versions use)", got, want)
	}
	ctx := context.Background()
	subscribe := func(q *queue.Queue) func() queue.Notice {
		t.Helper()
		next, _ := mustSubscribe(t, q)
		return func() queue.Notice {
			t.Helper()
			n, ok := next()
			if !ok {
				t.Fatal("subscription ended")
			}
			return n
		}
	}
	next0, next1 := subscribe(q0), subscribe(q1)
	// Database 1: three enter, the third leaves (waiting 2).
	for _, u := range []string{"a", "b", "c"} {
		if _, err := q1.Enter(ctx, "r1", u); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q1.Leave(ctx, "r1", "c"); err != nil {
		t.Fatal(err)
	}
	// The first arrival in the empty queue publishes (it wakes the room's
	// admission), then the leave.
	if n := next1(); n.Event.Waiting != 1 || n.Event.Ev != 1 {
		t.Fatalf("database 1 heard %+v, want its own first arrival (waiting 1)", n)
	}
	if n := next1(); n.Event.Waiting != 2 {
		t.Fatalf("database 1 heard %+v, want its own leave (waiting 2)", n)
	}
	// Database 0: one enters and leaves (waiting 0), published after
	// database 1's: its subscriber hears that first, or it heard the other.
	if _, err := q0.Enter(ctx, "r1", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := q0.Leave(ctx, "r1", "a"); err != nil {
		t.Fatal(err)
	}
	if n := next0(); n.Event.Waiting != 1 || n.Event.Ev != 1 {
		t.Fatalf("database 0 heard %+v first, want its own first arrival (waiting 1): database 1's event reached it", n)
	}
	if n := next0(); n.Event.Waiting != 0 || n.Event.Left[0] != 1 {
		t.Fatalf("database 0 heard %+v first, want its own leave (waiting 0): database 1's event reached it", n)
	}
}
