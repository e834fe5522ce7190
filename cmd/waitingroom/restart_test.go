package main

import (
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue/queuetest"
)

// redisProc is a redis-server of the test's own, on a spare port, with
// append-only persistence so a restart keeps the queue.
type redisProc struct {
	t    *testing.T
	dir  string
	port string
	cmd  *exec.Cmd
	done chan struct{}
}

func startRedis(t *testing.T, dir, port string, extra ...string) *redisProc {
	t.Helper()
	args := append([]string{"--port", port, "--bind", "127.0.0.1", "--dir", dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", ""}, extra...)
	return startProc(t, dir, port, args...)
}

// startProc runs redis-server with args and waits until port accepts.
func startProc(t *testing.T, dir, port string, args ...string) *redisProc {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no extra processes")
	}
	p := &redisProc{t: t, dir: dir, port: port}
	p.cmd = exec.Command("redis-server", args...)
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("redis-server (install it, or run make test): %v", err)
	}
	p.done = make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(p.kill)
	// The process itself must answer: after a restart, a server that
	// failed to bind (the port taken meanwhile) would leave the test
	// talking to another process, then to nobody.
	if err := queuetest.AwaitServer("127.0.0.1:"+port, p.cmd.Process.Pid, p.done); err != nil {
		t.Fatalf("redis-server on %s: %v", port, err)
	}
	return p
}

// ownRedisEnv is an env on a redis-server of the test's own (append-only,
// so a restart keeps the queue), with short client timeouts; restart it
// with startRedis(t, rp.dir, rp.port) after rp.kill().
func ownRedisEnv(t *testing.T) (*env, *redisProc) {
	t.Helper()
	_, port, _ := net.SplitHostPort(freePort(t))
	rp := startRedis(t, t.TempDir(), port)
	// A killed Redis is noticed at once (refused, reset), not by timeouts;
	// these are far above the server's own (cmd/waitingroom/redis.go), so
	// that on a loaded machine a slow fsync (appendfsync always: every
	// write waits for the disk) is not taken for an outage. It was, at
	// 2 s: enter answered 503 to a page test, and a PUT right after the
	// restart to TestRedisRestartMidStream with two suites side by side.
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port, DialTimeout: 2 * time.Second,
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, MaxRetries: 1})
	t.Cleanup(func() { rdb.Close() })
	base := newEnv(t) // the database (and a shared-Redis prefix not used)
	return &env{t: t, dbURL: base.dbURL, rdb: rdb, prefix: queuetest.Prefix()}, rp
}

// kill stops the server abruptly (SIGKILL), as a crash would.
func (p *redisProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// TestRedisRestartMidStream: Redis is killed while streams are open and
// comes back (with its append-only file) a moment later. Streams keep
// going, and every client converges to its true status: admissions made
// after the restart reach them, positions equal ZRANK.
func TestRedisRestartMidStream(t *testing.T) {
	e, rp := ownRedisEnv(t)
	in := e.start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	const users = 6
	streams := make([]*sseStream, users)
	for i := range users {
		streams[i] = openSSE(t, in, "default", in.enter(user(i+1), "default").str("queueToken"))
		if _, m := streams[i].next(t); m.Position != int64(i+1) {
			t.Fatalf("user%d first position %d", i+1, m.Position)
		}
	}

	ws := dialWS(t, in, "default", in.enter(user(users+1), "default").str("queueToken"))
	if m := readWS(t, ws); m.Position != users+1 {
		t.Fatalf("WebSocket first position %d", m.Position)
	}

	rp.kill()
	// While Redis is down the API answers 503 with Retry-After, never 500.
	r := do(t, "POST", in.base+"/api/v1/rooms/default/enter", in.login(user(40)), nil)
	if r.status != 503 || r.header.Get("Retry-After") == "" {
		t.Fatalf("enter with Redis down = %d %s", r.status, r.raw)
	}
	// Streams stay open and are told: places kept, come back slowly if cut.
	isDegraded := func(down bool) func(string, streamMsg) bool {
		return func(typ string, m streamMsg) bool { return typ == "degraded" && m.Degraded == down }
	}
	for i, s := range streams {
		if m := s.until(t, "degraded", isDegraded(true)); m.RetryAfterMs < 5000 {
			t.Fatalf("stream %d: degraded %+v, want retryAfterMs >= 5000", i, m)
		}
		if d, ok := s.r.Retry(); !ok || d < 5*time.Second {
			t.Fatalf("stream %d: retry %v during the outage, want >= 5s", i, d)
		}
	}
	wsUntil := func(down bool) {
		for range 100 {
			if m := readWS(t, ws); m.Type == "degraded" && m.Degraded == down {
				return
			}
		}
		t.Fatalf("no degraded=%v on the WebSocket", down)
	}
	wsUntil(true)
	restarted := time.Now()
	startRedis(t, rp.dir, rp.port)
	waitFor(t, "the first successful enter", func() bool {
		return do(t, "POST", in.base+"/api/v1/rooms/default/enter", in.login(user(41)), nil).status == 200
	})
	t.Logf("first successful enter %v after redis-server was started again", time.Since(restarted).Round(time.Millisecond))
	waitFor(t, "the server to reach Redis again", func() bool {
		return do(t, "GET", in.admin+"/readyz", "", nil).status == 200
	})
	for _, s := range streams {
		s.until(t, "degraded over", isDegraded(false))
	}
	wsUntil(false)
	in.setTarget("default", 2)
	for i := range users {
		if i < 2 {
			streams[i].until(t, "READY", isReady)
			continue
		}
		want := int64(i - 1)
		streams[i].until(t, "position "+strconv.FormatInt(want, 10), func(_ string, m streamMsg) bool { return m.Position == want })
		if got := zrank(t, e, "default", strconv.Itoa(i+1)); got != want {
			t.Fatalf("user%d: pushed %d, ZRANK+1 %d", i+1, want, got)
		}
	}
}
