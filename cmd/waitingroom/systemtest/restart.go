package systemtest

import (
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue/queuetest"
)

// RedisProc is a redis-server of the test's own, on a spare port, with
// append-only persistence so a restart keeps the queue.
type RedisProc struct {
	t    *testing.T
	Dir  string
	Port string
	cmd  *exec.Cmd
	done chan struct{}
}

func StartRedis(t *testing.T, dir, port string, extra ...string) *RedisProc {
	t.Helper()
	args := append([]string{"--port", port, "--bind", "127.0.0.1", "--dir", dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", ""}, extra...)
	return StartProc(t, dir, port, args...)
}

// StartProc runs redis-server with args and waits until port accepts.
func StartProc(t *testing.T, dir, port string, args ...string) *RedisProc {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no extra processes")
	}
	p := &RedisProc{t: t, Dir: dir, Port: port}
	p.cmd = exec.Command("redis-server", args...)
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("redis-server (install it, or run make test): %v", err)
	}
	p.done = make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(p.Kill)
	// The process itself must answer: after a restart, a server that
	// failed to bind (the port taken meanwhile) would leave the test
	// talking to another process, then to nobody.
	if err := queuetest.AwaitServer("127.0.0.1:"+port, p.cmd.Process.Pid, p.done); err != nil {
		t.Fatalf("redis-server on %s: %v", port, err)
	}
	return p
}

// OwnRedisEnv is an env on a redis-server of the test's own (append-only,
// so a restart keeps the queue), with short client timeouts; restart it
// with StartRedis(t, rp.Dir, rp.Port) after rp.Kill().
func OwnRedisEnv(t *testing.T) (*Env, *RedisProc) {
	t.Helper()
	_, port, _ := net.SplitHostPort(FreePort(t))
	rp := StartRedis(t, t.TempDir(), port)
	// A killed Redis is noticed at once (refused, reset), not by timeouts;
	// these are far above the server's own (cmd/waitingroom/compose/redis.go), so
	// that on a loaded machine a slow fsync (appendfsync always: every
	// write waits for the disk) is not taken for an outage. It was, at
	// 2 s: enter answered 503 to a page test, and a PUT right after the
	// restart to TestRedisRestartMidStream with two suites side by side.
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port, DialTimeout: 2 * time.Second,
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, MaxRetries: 1})
	t.Cleanup(func() { rdb.Close() })
	base := NewEnv(t) // the database (and a shared-Redis prefix not used)
	return &Env{T: t, DBURL: base.DBURL, Redis: rdb, Prefix: queuetest.Prefix()}, rp
}

// Kill stops the server abruptly (SIGKILL), as a crash would.
func (p *RedisProc) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}
