package systemtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"waitingroom/cmd/waitingroom/compose"
)

// Run is the TestMain of every package of system tests: it runs m's tests
// and fails the package when any goroutine outlives them: every server,
// stream, hub and admission loop must stop completely. Goroutines of
// fasthttp itself are ignored: its process-wide date updater and dialer
// cache cleaner, and the cleaners of its worker pool and of the gateway's
// origin client, which notice a stopped server or closed connections only
// after their idle period and then exit.
//
// With WR_TEST_CHILD=serve the test binary is instead a server process of
// its own (see StartChild).
func Run(m *testing.M) {
	if os.Getenv("WR_TEST_CHILD") == "serve" {
		if err := serveChild(); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	redis.SetLogger(quietRedis{}) // tests that kill Redis would flood the output with dial errors
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
		// The gateway's origin client: its idle-connection cleaner ends on
		// its own once the connections it watches are closed (at shutdown)
		// and its idle period has passed; the dialer's address cache
		// cleaner is process-wide, like the date updater.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*TCPDialer).tcpAddrsClean"),
	)
}

type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

// serveChild runs a server configured by the environment, after lowering
// its open-file limit to WR_TEST_NOFILE, until SIGTERM.
func serveChild() error {
	var n uint64
	if _, err := fmt.Sscan(os.Getenv("WR_TEST_NOFILE"), &n); err != nil {
		return err
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
		return err
	}
	cfg, err := compose.LoadConfig(os.Getenv)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	m := &compose.Main{Config: cfg, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), KeyPrefix: os.Getenv("WR_TEST_PREFIX")}
	if err := m.Open(ctx); err != nil {
		return errors.Join(err, m.Close())
	}
	return errors.Join(m.Run(ctx), m.Close())
}
