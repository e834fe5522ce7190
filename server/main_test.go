package server_test

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

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"waitingroom/server"
	"waitingroom/server/pgstore"
)

// TestMain fails the package when any goroutine outlives the tests:
// every server, stream, hub and admission loop must stop completely.
// Two goroutines of fasthttp itself are ignored: its process-wide date
// updater, and its worker pool's cleaner, which notices a stopped server
// only after its idle period (10 s) and then exits.
//
// With WR_TEST_CHILD=serve the test binary is instead a server process of
// its own (see TestConnectionCeiling).
func TestMain(m *testing.M) {
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
	cfg, err := server.LoadConfig(os.Getenv)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	rdb, err := server.OpenRedis(cfg)
	if err != nil {
		return err
	}
	defer rdb.Close()
	reg := prometheus.NewRegistry()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	store, err := pgstore.Open(ctx, cfg.DatabaseURL, pgstore.Options{PoolSize: cfg.DBPool, Registerer: reg, Logger: log})
	if err != nil {
		return err
	}
	defer store.Close()
	srv, err := server.New(server.Options{Config: cfg, Redis: rdb, Store: store, Logger: log, KeyPrefix: os.Getenv("WR_TEST_PREFIX"), Registry: reg})
	if err != nil {
		return err
	}
	stopLoops := server.StartLoops(srv.Loops())
	err = srv.Run(ctx)
	lctx, cancel := context.WithTimeout(context.Background(), cfg.Shutdown)
	defer cancel()
	return errors.Join(err, stopLoops(lctx))
}
