package queuetest_test

import (
	"context"
	"net"
	"testing"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue/queuetest"
)

// TestServer: each call starts a server of its own, empty and writable,
// and the server is gone once its test has ended.
func TestServer(t *testing.T) {
	ctx := context.Background()
	var first *redis.Options
	t.Run("start", func(t *testing.T) {
		a, b := queuetest.Server(t), queuetest.Server(t)
		if a == b {
			t.Fatalf("two servers on one URL %s", a)
		}
		for _, url := range []string{a, b} {
			opt, err := redis.ParseURL(url)
			if err != nil {
				t.Fatal(err)
			}
			rdb := redis.NewClient(opt)
			defer rdb.Close()
			if n, err := rdb.DBSize(ctx).Result(); err != nil || n != 0 {
				t.Fatalf("%s: %d keys (%v), want an empty server", url, n, err)
			}
			if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
				t.Fatalf("%s: SET: %v", url, err)
			}
		}
		first, _ = redis.ParseURL(a)
	})
	if c, err := net.Dial("tcp", first.Addr); err == nil {
		c.Close()
		t.Errorf("the server at %s still accepts connections after its test ended", first.Addr)
	}
}
