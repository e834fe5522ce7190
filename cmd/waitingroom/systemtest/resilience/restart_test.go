package resilience

import (
	"strconv"
	"testing"
	"time"

	"waitingroom/cmd/waitingroom/systemtest"
)

// TestRedisRestartMidStream: Redis is killed while streams are open and
// comes back (with its append-only file) a moment later. Streams keep
// going, and every client converges to its true status: admissions made
// after the restart reach them, positions equal ZRANK.
func TestRedisRestartMidStream(t *testing.T) {
	e, rp := systemtest.OwnRedisEnv(t)
	in := e.Start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	const users = 6
	streams := make([]*systemtest.SSEStream, users)
	for i := range users {
		streams[i] = systemtest.OpenSSE(t, in, "default", in.Enter(systemtest.User(i+1), "default").Str("queueToken"))
		if _, m := streams[i].Next(t); m.Position != int64(i+1) {
			t.Fatalf("user%d first position %d", i+1, m.Position)
		}
	}

	ws := systemtest.DialWS(t, in, "default", in.Enter(systemtest.User(users+1), "default").Str("queueToken"))
	if m := systemtest.ReadWS(t, ws); m.Position != users+1 {
		t.Fatalf("WebSocket first position %d", m.Position)
	}

	rp.Kill()
	// While Redis is down the API answers 503 with Retry-After, never 500.
	r := systemtest.Do(t, "POST", in.Base+"/api/v1/rooms/default/enter", in.Login(systemtest.User(40)), nil)
	if r.Status != 503 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("enter with Redis down = %d %s", r.Status, r.Raw)
	}
	// Streams stay open and are told: places kept, come back slowly if cut.
	isDegraded := func(down bool) func(string, systemtest.StreamMsg) bool {
		return func(typ string, m systemtest.StreamMsg) bool { return typ == "degraded" && m.Degraded == down }
	}
	for i, s := range streams {
		if m := s.Until(t, "degraded", isDegraded(true)); m.RetryAfterMs < 5000 {
			t.Fatalf("stream %d: degraded %+v, want retryAfterMs >= 5000", i, m)
		}
		if d, ok := s.R.Retry(); !ok || d < 5*time.Second {
			t.Fatalf("stream %d: retry %v during the outage, want >= 5s", i, d)
		}
	}
	wsUntil := func(down bool) {
		for range 100 {
			if m := systemtest.ReadWS(t, ws); m.Type == "degraded" && m.Degraded == down {
				return
			}
		}
		t.Fatalf("no degraded=%v on the WebSocket", down)
	}
	wsUntil(true)
	restarted := time.Now()
	systemtest.StartRedis(t, rp.Dir, rp.Port)
	systemtest.WaitFor(t, "the first successful enter", func() bool {
		return systemtest.Do(t, "POST", in.Base+"/api/v1/rooms/default/enter", in.Login(systemtest.User(41)), nil).Status == 200
	})
	t.Logf("first successful enter %v after redis-server was started again", time.Since(restarted).Round(time.Millisecond))
	systemtest.WaitFor(t, "the server to reach Redis again", func() bool {
		return systemtest.Do(t, "GET", in.Admin+"/readyz", "", nil).Status == 200
	})
	for _, s := range streams {
		s.Until(t, "degraded over", isDegraded(false))
	}
	wsUntil(false)
	in.SetTarget("default", 2)
	for i := range users {
		if i < 2 {
			streams[i].Until(t, "READY", systemtest.IsReady)
			continue
		}
		want := int64(i - 1)
		streams[i].Until(t, "position "+strconv.FormatInt(want, 10), func(_ string, m systemtest.StreamMsg) bool { return m.Position == want })
		if got := systemtest.Zrank(t, e, "default", strconv.Itoa(i+1)); got != want {
			t.Fatalf("user%d: pushed %d, ZRANK+1 %d", i+1, want, got)
		}
	}
}
