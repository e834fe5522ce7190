package queuetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue"
)

// Update changes room of q as the admin API does (the room created with
// no admission and a minute's entry window if missing).
func Update(tb testing.TB, q *queue.Queue, room string, u queue.RoomUpdate) queue.RoomInfo {
	tb.Helper()
	info, err := q.UpdateRoom(context.Background(), room, u, true, queue.RoomConfig{Target: 0, EntryTTL: time.Minute})
	if err != nil {
		tb.Fatalf("update %s: %v", room, err)
	}
	return info
}

// RedisNow is Redis's clock, which the scripts use.
func RedisNow(tb testing.TB, rdb *redis.Client) time.Time {
	tb.Helper()
	now, err := rdb.Time(context.Background()).Result()
	if err != nil {
		tb.Fatal(err)
	}
	return now
}

// OpenEvents counts the open events received on ps until it has been
// quiet for 200 ms.
func OpenEvents(ctx context.Context, ps *redis.PubSub) int {
	opens := 0
	for {
		m, err := ps.ReceiveTimeout(ctx, 200*time.Millisecond)
		if err != nil {
			return opens
		}
		if msg, ok := m.(*redis.Message); ok && strings.Contains(msg.Payload, `"kind":"open"`) {
			opens++
		}
	}
}

// Order returns room's queue under prefix, front first, with its tickets.
func Order(tb testing.TB, rdb *redis.Client, prefix, room string) ([]string, []int64) {
	tb.Helper()
	zs, err := rdb.ZRangeWithScores(context.Background(), prefix+"{"+room+"}:queue", 0, -1).Result()
	if err != nil {
		tb.Fatal(err)
	}
	users := make([]string, len(zs))
	tickets := make([]int64, len(zs))
	for i, z := range zs {
		users[i], tickets[i] = z.Member.(string), int64(z.Score)
	}
	return users, tickets
}
