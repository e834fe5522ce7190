package server_test

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
	p := &redisProc{t: t, dir: dir, port: port}
	p.cmd = exec.Command("redis-server", args...)
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("redis-server (install it, or run make test): %v", err)
	}
	p.done = make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(p.kill)
	waitFor(t, "redis-server on "+port, func() bool {
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return p
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
	port := freePort(t)
	_, port, _ = net.SplitHostPort(port)
	dir := t.TempDir()
	rp := startRedis(t, dir, port)
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port, DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond, MaxRetries: 1})
	t.Cleanup(func() { rdb.Close() })
	base := newEnv(t) // the database (and a shared-Redis prefix we do not use)
	e := &env{t: t, dbURL: base.dbURL, rdb: rdb, prefix: queuetest.Prefix()}
	in := e.start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	const users = 6
	streams := make([]*sseStream, users)
	for i := range users {
		streams[i] = openSSE(t, in, "default", in.enter(user(i+1), "default").str("queueToken"))
		if _, m := streams[i].next(t); m.Position != int64(i+1) {
			t.Fatalf("user%d first position %d", i+1, m.Position)
		}
	}

	rp.kill()
	// While Redis is down the API answers 503 with Retry-After, never 500.
	r := do(t, "POST", in.base+"/api/v1/rooms/default/enter", in.login(user(40)), nil)
	if r.status != 503 || r.header.Get("Retry-After") == "" {
		t.Fatalf("enter with Redis down = %d %s", r.status, r.raw)
	}
	startRedis(t, dir, port)
	waitFor(t, "the server to reach Redis again", func() bool {
		return do(t, "GET", in.admin+"/readyz", "", nil).status == 200
	})
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
