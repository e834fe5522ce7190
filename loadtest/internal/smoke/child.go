// Package smoke runs the scenarios' smoke tests against a real server:
// the command, waitingroom/cmd/waitingroom, built once per test binary (or
// once per run: make test builds it and names it in WR_TEST_COMMAND) and
// started as a child process configured only through its environment, on a
// Redis of its own and a fresh Postgres database, the admission loop every
// 100 ms. The smoke tests assert counts only, never timings; with -short
// they skip.
package smoke

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/queue/queuetest"
)

const (
	// readyDeadline bounds the wait for a child to answer /readyz 200 and
	// hold its room.
	readyDeadline = 60 * time.Second
	// exitDeadline bounds the wait for a child to exit after SIGTERM; then
	// it is killed.
	exitDeadline = 30 * time.Second
	// stderrTail is how much of a child's stderr failure messages show.
	stderrTail = 16 << 10
)

// built is the command built for this run of the test binary.
var built struct {
	once sync.Once
	dir  string // the temporary directory holding it, removed by TestMain
	path string
	err  error
}

// Main runs m's tests and removes the command built for them: a
// TestMain's body, os.Exit(Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	return code
}

// commandPath builds waitingroom/cmd/waitingroom on first use and returns
// the path of the binary; a failed build fails every test that needs it.
func commandPath(t testing.TB) string {
	t.Helper()
	built.once.Do(func() { built.path, built.err = buildCommand() })
	if built.err != nil {
		t.Fatalf("the smoke runs need the command built: %v", built.err)
	}
	return built.path
}

// Command is the path of the command built for this test binary, for a
// scenario that starts the server itself; a failed build fails t. With
// -short the test skips, as the other smoke runs do.
func Command(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no extra processes")
	}
	return commandPath(t)
}

// commandVar names a command already built from this checkout, for every
// test binary of a run to share (make test sets it; each package linked
// the command anew before).
const commandVar = "WR_TEST_COMMAND"

func buildCommand() (string, error) {
	if path := os.Getenv(commandVar); path != "" {
		if fi, err := os.Stat(path); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%s=%s is not an executable file (%v)", commandVar, path, err)
		}
		return path, nil
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	dir, err := os.MkdirTemp("", "wr-loadtest-")
	if err != nil {
		return "", err
	}
	built.dir = dir
	path := filepath.Join(dir, "waitingroom")
	out, err := exec.Command(goTool, "build", "-o", path, "waitingroom/cmd/waitingroom").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s build -o %s waitingroom/cmd/waitingroom: %w\n%s", goTool, path, err, out)
	}
	return path, nil
}

// FreeAddr is a loopback address for a server a test starts (the shared
// queuetest.FreeAddr, below the ephemeral ports).
func FreeAddr(t *testing.T) string { return queuetest.FreeAddr(t) }

// childEnv is the test's environment without the command's configuration
// (WR_*, REDIS_URL, DATABASE_URL), then vars: the child reads vars and
// nothing else of the caller's configuration.
func childEnv(vars map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "WR_") && k != "REDIS_URL" && k != "DATABASE_URL" {
			env = append(env, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		env = append(env, k+"="+vars[k])
	}
	return env
}

// child is a running command.
type child struct {
	cmd    *exec.Cmd
	stderr *tailBuffer
	exited chan struct{}
	err    error // the exit status, once exited is closed
	told   bool  // a failure message has shown the stderr of an early exit
}

// startChild runs the command configured by vars, waits until s's admin
// address answers /readyz 200 and s's room exists, and stops it when t
// ends: SIGTERM, then the exit, which must be a clean one. It returns the
// process id.
func startChild(t *testing.T, vars map[string]string, s Server) int {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no extra processes")
	}
	c := &child{cmd: exec.Command(commandPath(t)), stderr: &tailBuffer{max: stderrTail}, exited: make(chan struct{})}
	c.cmd.Env = childEnv(vars)
	c.cmd.Stdout, c.cmd.Stderr = c.stderr, c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start the command: %v", err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.exited) }()
	t.Cleanup(func() { c.stop(t) })
	if err := c.awaitReady(t, s); err != nil {
		c.told = true
		t.Fatalf("the command did not become ready: %v\nits stderr:\n%s", err, c.stderr)
	}
	return c.cmd.Process.Pid
}

// awaitReady polls s until /readyz answers 200 and the room can be read —
// the command creates its configured rooms on its first admission tick —
// at most readyDeadline, giving up at once if the process exits.
func (c *child) awaitReady(t *testing.T, s Server) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(readyDeadline)
	last := errors.New("no answer yet")
	for {
		select {
		case <-c.exited:
			return fmt.Errorf("it exited (%v)", c.err)
		default:
		}
		if last = client.ReadyzOK(context.Background(), hc, s.Admin); last == nil {
			if _, last = s.RoomState(t); last == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready within %v: %w", readyDeadline, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits for the exit, at most exitDeadline, then
// kills the process; it fails t unless the process exits with status 0 on
// SIGTERM.
func (c *child) stop(t *testing.T) {
	select {
	case <-c.exited:
		if !c.told {
			t.Errorf("the command exited before the test ended (%v)\nits stderr:\n%s", c.err, c.stderr)
		}
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
		if c.err != nil {
			t.Errorf("the command exited with %v after SIGTERM\nits stderr:\n%s", c.err, c.stderr)
		}
	case <-time.After(exitDeadline):
		_ = c.cmd.Process.Kill()
		<-c.exited
		t.Errorf("the command did not exit within %v of SIGTERM: killed\nits stderr:\n%s", exitDeadline, c.stderr)
	}
}

// tailBuffer keeps the last max bytes written to it (a child's log may be
// long: every refused request of the attack runs is a line).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
	cut bool
}

func (w *tailBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if over := len(w.b) - w.max; over > 0 {
		w.b = append(w.b[:0], w.b[over:]...)
		w.cut = true
	}
	return len(p), nil
}

func (w *tailBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cut {
		return "…" + string(w.b)
	}
	return string(w.b)
}
