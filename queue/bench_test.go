package queue_test

import (
	"context"
	"flag"
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

var openUsers = flag.Int("open-users", 100_000, "BenchmarkOpening: users in the pre-queue")

// BenchmarkOpening opens a random room whose pre-queue holds -open-users
// users (filled directly, arrival order 1..n), and reports the Redis work
// per user and the longest a PING sent every millisecond meanwhile had to
// wait: how long the opening holds every other request of the shard.
func BenchmarkOpening(b *testing.B) {
	ctx := context.Background()
	var perUser, stall float64
	for i := range b.N {
		b.StopTimer()
		rdb, prefix := queuetest.Redis(b)
		q := queue.New(rdb, queue.Options{Prefix: prefix})
		room := "o" + strconv.Itoa(i)
		fillPreQueue(b, q, rdb, room, *openUsers)
		done := make(chan struct{})
		worst := make(chan time.Duration)
		go func() {
			var w time.Duration
			for {
				select {
				case <-done:
					worst <- w
					return
				case <-time.After(time.Millisecond):
				}
				t0 := time.Now()
				if err := rdb.Ping(ctx).Err(); err != nil {
					b.Error(err)
				}
				w = max(w, time.Since(t0))
			}
		}()
		b.StartTimer()
		t0 := time.Now()
		for {
			res, err := q.Open(ctx, room, queue.NewShuffleSeed())
			if err != nil {
				b.Fatal(err)
			}
			if res.Done {
				if res.Moved != *openUsers {
					b.Fatalf("opened %+v, want %d moved", res, *openUsers)
				}
				break
			}
		}
		perUser += float64(time.Since(t0).Microseconds()) / float64(*openUsers)
		close(done)
		stall = max(stall, float64((<-worst).Microseconds())/1000)
	}
	b.ReportMetric(perUser/float64(b.N), "µs/user")
	b.ReportMetric(stall, "max-ping-ms")
}

// fillPreQueue makes room a random room with an opening time in the past
// and n users in its pre-queue, written directly in pipelines.
func fillPreQueue(b *testing.B, q *queue.Queue, rdb *redis.Client, room string, n int) {
	ctx := context.Background()
	if err := q.EnsureRoom(ctx, room, queue.RoomConfig{Target: 0, EntryTTL: time.Minute}); err != nil {
		b.Fatal(err)
	}
	random, past := queue.MethodRandom, time.Now().Add(-time.Hour)
	if _, err := q.UpdateRoom(ctx, room, queue.RoomUpdate{Method: &random, OpensAt: &past}, false, queue.RoomConfig{}); err != nil {
		b.Fatal(err)
	}
	key := q.RoomKey(room, "prequeue")
	for from := 0; from < n; from += 10_000 {
		zs := make([]redis.Z, 0, 10_000)
		for u := from; u < min(from+10_000, n); u++ {
			zs = append(zs, redis.Z{Score: float64(u + 1), Member: "user" + strconv.Itoa(u)})
		}
		if err := rdb.ZAdd(ctx, key, zs...).Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSnapshotGone measures one room's snapshot with 100,000
// departed tickets above serving (written directly): full sends the list,
// held is the read of a hub that already holds it, which only counts it.
func BenchmarkSnapshotGone(b *testing.B) {
	const departed = 100_000
	rdb, prefix := queuetest.Redis(b)
	q := queue.New(rdb, queue.Options{Prefix: prefix})
	ctx := context.Background()
	if err := q.EnsureRoom(ctx, "r1", queue.RoomConfig{Target: 0, EntryTTL: time.Minute}); err != nil {
		b.Fatal(err)
	}
	for from := 0; from < departed; from += 10_000 {
		zs := make([]redis.Z, 0, 10_000)
		for t := from + 1; t <= from+10_000; t++ {
			zs = append(zs, redis.Z{Score: float64(t), Member: strconv.Itoa(t)})
		}
		if err := rdb.ZAdd(ctx, q.RoomKey("r1", "gone"), zs...).Err(); err != nil {
			b.Fatal(err)
		}
	}
	if err := rdb.HSet(ctx, q.RoomKey("r1", "stats"), "ev", 7).Err(); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		held queue.GoneHeld
	}{
		{"full", queue.GoneHeld{}},
		{"held", queue.GoneHeld{Known: true, Ev: 7, Count: departed}},
	} {
		b.Run(c.name, func(b *testing.B) {
			held := []queue.GoneHeld{c.held}
			for range b.N {
				snaps, err := q.SnapshotsSince(ctx, []string{"r1"}, held)
				if err != nil {
					b.Fatal(err)
				}
				if sn := snaps[0]; sn.GoneCount != departed || sn.GoneOmitted != c.held.Known {
					b.Fatalf("snapshot: %d departed, omitted %v", sn.GoneCount, sn.GoneOmitted)
				}
			}
		})
	}
}
