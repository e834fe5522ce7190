package systemtest

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// AgeSeen makes the expected return of every waiting user of room past
// (score 0), as if none had been seen for a long time: for tests of what
// an idle drop does, without waiting out a stream's grace.
func AgeSeen(t *testing.T, e *Env, in *Instance, room string) {
	t.Helper()
	ctx := context.Background()
	key := in.Parts.Queue.RoomKey(room, "seen")
	users, err := e.Redis.ZRange(ctx, key, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if err := e.Redis.ZAddXX(ctx, key, redis.Z{Score: 0, Member: u}).Err(); err != nil {
			t.Fatal(err)
		}
	}
}
