package compose

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue/queuetest"
)

// TestRedisUnreachableSaidAtStart: no Redis at REDIS_URL is a warning
// at start naming the variable and the address tried, never "connected".
func TestRedisUnreachableSaidAtStart(t *testing.T) {
	addr := queuetest.FreeAddr(t) // reserved to this process: nothing listens there
	var buf strings.Builder
	m := &Main{Config: Config{RedisURL: "redis://" + addr + "/0"}, Log: slog.New(slog.NewTextHandler(&buf, nil))}
	m.rdb = redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = m.rdb.Close() })
	m.checkRedis(context.Background())
	if out := buf.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "REDIS_URL") ||
		!strings.Contains(out, addr) || strings.Contains(out, "connected") {
		t.Errorf("the start's Redis line = %q, want a warning naming REDIS_URL and %s", out, addr)
	}
}
