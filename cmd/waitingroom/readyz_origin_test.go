package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/server/pass"
)

// TestGatewayOriginSaidAtStart: a WR_UPSTREAM nothing listens on is a
// warning at start naming the variable and the address tried, and
// /readyz's origin check says "unreachable" while the instance stays
// ready (200: it still queues visitors).
func TestGatewayOriginSaidAtStart(t *testing.T) {
	addr := freePort(t) // reserved to this process: nothing listens there
	in := newRedisOnlyEnv(t).start(map[string]string{"WR_UPSTREAM": "http://" + addr, "WR_PROTECT": "GET /checkout/*=sale",
		"WR_PASS_KEY": pass.GenerateKey(), "WR_ROOMS": "sale"})
	if line := in.logLine("WARN", "WR_UPSTREAM", addr); line == "" {
		t.Errorf("no warning naming WR_UPSTREAM and %s at start; log:\n%s", addr, in.logs.String())
	}
	if line := in.logLine("redis: connected"); line == "" {
		t.Errorf("no redis: connected line at start")
	}
	r := do(t, "GET", in.admin+"/readyz", "", nil)
	if r.status != 200 || !strings.HasPrefix(readyzCheck(r, "origin"), "unreachable") {
		t.Fatalf("readyz with the origin down = %d %s, want 200 with origin unreachable", r.status, r.raw)
	}
}

// TestGatewayOriginCheck: /readyz's origin check follows the origin's
// last answer: ok while it answers below 500, "errors" after a 5xx, ok
// again; readiness never fails on it.
func TestGatewayOriginCheck(t *testing.T) {
	var fail atomic.Bool
	o := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(o.Close)
	in := newRedisOnlyEnv(t).start(map[string]string{"WR_UPSTREAM": o.URL, "WR_PROTECT": "GET /checkout/*=sale",
		"WR_PASS_KEY": pass.GenerateKey(), "WR_ROOMS": "sale"})
	if line := in.logLine("origin: reachable"); line == "" {
		t.Errorf("no origin: reachable line at start")
	}
	check := func(want string) {
		t.Helper()
		r := do(t, "GET", in.admin+"/readyz", "", nil)
		if r.status != 200 || !strings.HasPrefix(readyzCheck(r, "origin"), want) {
			t.Fatalf("readyz = %d %s, want 200 with origin %s", r.status, r.raw, want)
		}
	}
	check("ok")
	fail.Store(true)
	if res, err := http.Get(in.base + "/public"); err != nil || res.StatusCode != 500 {
		t.Fatalf("through the gateway: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	check("errors")
	fail.Store(false)
	if res, err := http.Get(in.base + "/public"); err != nil || res.StatusCode != 200 {
		t.Fatalf("through the gateway: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	check("ok")
}

// TestRedisUnreachableSaidAtStart: no Redis at REDIS_URL is a warning
// at start naming the variable and the address tried, never "connected".
func TestRedisUnreachableSaidAtStart(t *testing.T) {
	addr := freePort(t) // reserved to this process: nothing listens there
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
