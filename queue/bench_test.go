package queue_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue"
	"waitingroom/queue/queuetest"
)

// BenchmarkEnter measures the enter script (INCR + ZADD NX) on real Redis,
// each op a new user.
func BenchmarkEnter(b *testing.B) {
	q, _ := mustQueue(b, 0, time.Minute)
	var n atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := q.Enter(context.Background(), "r1", strconv.FormatInt(n.Add(1), 10)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkStatus measures the status script for a waiting user.
func BenchmarkStatus(b *testing.B) {
	q, _ := mustQueue(b, 0, time.Minute)
	for i := range 1000 {
		mustEnter(b, q, strconv.Itoa(i))
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := q.Status(context.Background(), "r1", "500"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkAdmit measures one admission run that pops 20 users (the
// default targetActive), stores their tokens and publishes the event.
func BenchmarkAdmit(b *testing.B) {
	const batch = 20
	rdb, prefix := queuetest.Redis(b)
	q := queue.New(rdb, queue.Options{Prefix: prefix})
	ctx := context.Background()
	if err := q.EnsureRoom(ctx, "r1", queue.RoomConfig{Target: 1 << 40, EntryTTL: time.Hour}); err != nil {
		b.Fatal(err)
	}
	// Fill the queue directly: b.N runs of 20 users each.
	members := make([]redis.Z, 0, 1000)
	for i := range b.N * batch {
		members = append(members, redis.Z{Score: float64(i + 1), Member: strconv.Itoa(i)})
		if len(members) == cap(members) || i == b.N*batch-1 {
			rdb.ZAdd(ctx, prefix+"{r1}:queue", members...)
			members = members[:0]
		}
	}
	b.ResetTimer()
	for range b.N {
		res, err := q.Admit(ctx, "r1", batch)
		if err != nil || len(res.Admitted) != batch {
			b.Fatalf("admit = %d users, %v", len(res.Admitted), err)
		}
	}
}
