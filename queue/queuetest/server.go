package queuetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/internal/freeport"
)

// startTries is how many free ports Server tries: a port found free may be
// taken by another process before redis-server binds it.
const startTries = 3

// serverDeadline bounds the wait for a started redis-server to answer.
const serverDeadline = 15 * time.Second

// Server starts a redis-server of tb's own on a free loopback port, without
// persistence (--save "" --appendonly no), waits until it answers and
// returns its URL, e.g. "redis://127.0.0.1:40123/0". The server is killed
// when tb's test ends, and its data dies with it.
//
// It is for code that uses the default key prefix — a child process
// configured through REDIS_URL — which must not share the Redis of the
// other tests (Redis gives each test a prefix instead). It fails the test
// (never skips it) when redis-server is missing or does not start.
func Server(tb testing.TB) string {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Fatalf("queuetest: redis-server is not installed (%v): install it (apt-get install redis-server) or run `make test`, which installs it", err)
	}
	var failures []string
	for range startTries {
		url, err := startServer(tb, bin, tb.TempDir())
		if err == nil {
			return url
		}
		failures = append(failures, err.Error())
	}
	tb.Fatalf("queuetest: redis-server did not start:\n%s", strings.Join(failures, "\n"))
	return ""
}

// startServer runs bin on a free loopback port and waits until it answers;
// on success the server is killed when tb ends, on error it is killed at
// once and the error carries its output.
func startServer(tb testing.TB, bin, dir string, extra ...string) (string, error) {
	addr, err := freeAddr()
	if err != nil {
		return "", err
	}
	host, port, _ := net.SplitHostPort(addr)
	out := &SyncBuffer{}
	args := append([]string{"--port", port, "--bind", host, "--save", "", "--appendonly", "no", "--dir", dir}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() { _ = cmd.Process.Kill(); <-exited }
	if err := AwaitServer(addr, cmd.Process.Pid, exited); err != nil {
		stop()
		return "", fmt.Errorf("redis-server on %s: %w\n%s", addr, err, out)
	}
	tb.Cleanup(stop)
	return "redis://" + addr + "/0", nil
}

// AwaitServer waits until the redis-server of process pid answers on addr:
// a server that answers with another process id is not ours (the port was
// taken in between), and one that exited (exited closed) never will.
func AwaitServer(addr string, pid int, exited <-chan struct{}) error {
	if err := awaitAccept(addr, exited); err != nil {
		return err
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), serverDeadline)
	defer cancel()
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return fmt.Errorf("INFO: %w", err)
	}
	if got := infoField(info, "process_id"); got != strconv.Itoa(pid) {
		return fmt.Errorf("the port answers for process %s, not %d", got, pid)
	}
	return nil
}

// awaitAccept waits until addr accepts a connection, at most serverDeadline;
// it gives up at once when the process has exited.
func awaitAccept(addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(serverDeadline)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return errors.New("exited before accepting connections")
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not accepting connections within %v: %w", serverDeadline, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// infoField is the value of field in the text of an INFO reply.
func infoField(info, field string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

// FreeAddr is a loopback address whose port was free a moment ago, for a
// server a test starts (a redis-server, a PostgreSQL, a child instance).
// Such a port is bound only once that process is up, and may be free again
// for a moment while the test restarts it; so it comes from below the
// kernel's ephemeral range and stays reserved to this process, against
// every other test process too, while it lives (package freeport).
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	addr, err := freeAddr()
	if err != nil {
		tb.Fatal(err)
	}
	return addr
}

func freeAddr() (string, error) { return freeport.BelowEphemeral() }

// SyncBuffer is a buffer that a process (or a server's logger) writes
// while a test may read it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
