package pgstore_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"waitingroom/server/pgstore"
	"waitingroom/server/pgstore/pgtest"
)

func migrationFileCount(tb testing.TB) int64 {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no migration files found: %v", err)
	}
	return int64(len(files))
}

func TestOpenTwiceAppliesMigrationsOnce(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)

	first := mustOpen(t, url, pgstore.Options{})
	mustSeed(t, first, pgstore.SeedOptions{Users: 1, PasswordHash: []byte("h"), Products: 1, Stock: 7})
	first.Close()

	second := mustOpen(t, url, pgstore.Options{})
	if got, want := mustStock(t, second, 1), int64(7); got != want {
		t.Errorf("stock after reopening = %d, want %d (data must survive a second Open)", got, want)
	}
	conn := mustConnect(t, url)
	if got, want := mustCount(t, conn, `SELECT count(*) FROM schema_migrations`), migrationFileCount(t); got != want {
		t.Errorf("schema_migrations rows = %d, want %d", got, want)
	}
}

func TestOpenConcurrently(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)

	const instances = 4
	var wg sync.WaitGroup
	errs := make([]error, instances)
	for i := range instances {
		wg.Go(func() {
			s, err := pgstore.Open(t.Context(), url, pgstore.Options{PoolSize: 2})
			errs[i] = err
			if err == nil {
				s.Close()
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open #%d: %v", i, err)
		}
	}
	conn := mustConnect(t, url)
	if got, want := mustCount(t, conn, `SELECT count(*) FROM schema_migrations`), migrationFileCount(t); got != want {
		t.Errorf("schema_migrations rows = %d, want %d", got, want)
	}
	if got := mustCount(t, conn, `SELECT count(*) FROM orders`); got != 0 {
		t.Errorf("orders rows = %d, want 0", got)
	}
}

func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	// Port 1 refuses connections on any machine that runs these tests.
	_, err := pgstore.Open(t.Context(), "postgres://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=5", pgstore.Options{})
	if err == nil {
		t.Fatal("Open of an unreachable server succeeded, want an error")
	}
}

func TestOpenRegistersMetricsOnce(t *testing.T) {
	t.Parallel()
	s := newStore(t, pgstore.Options{PoolSize: 7})
	if got, want := poolGauge(t, s.reg, "max"), 7.0; got != want {
		t.Errorf(`pool_connections{state="max"} = %v, want %v`, got, want)
	}

	if _, err := pgstore.Open(t.Context(), s.url, pgstore.Options{Registerer: s.reg}); err == nil {
		t.Fatal("second Open on the same registerer succeeded, want a registration error")
	}
	s.Close()
	again := mustOpen(t, s.url, pgstore.Options{Registerer: s.reg, PoolSize: 3})
	if got, want := poolGauge(t, s.reg, "max"), 3.0; got != want {
		t.Errorf(`after Close and reopen, pool_connections{state="max"} = %v, want %v`, got, want)
	}
	if err := again.Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
}

// Every method acquires through one helper, so each call that reaches the
// database adds exactly one observation to the wait and hold histograms.
func TestHoldHistogramCountsEveryAcquisition(t *testing.T) {
	t.Parallel()
	s := newStore(t, pgstore.Options{})
	mustSeed(t, s.Store, pgstore.SeedOptions{Users: 1, PasswordHash: []byte("h"), Products: 1, Stock: 1})
	user := mustUserID(t, s.Store, "user1")

	const hold, wait = "waitingroom_db_connection_hold_seconds", "waitingroom_db_pool_acquire_wait_seconds"
	holdBefore, waitBefore := histogramCount(t, s.reg, hold), histogramCount(t, s.reg, wait)

	ctx := t.Context()
	calls := []func() error{
		func() error { return s.Ping(ctx) },
		func() error { _, _, err := s.Credentials(ctx, "user1"); return err },
		func() error { _, _, err := s.Credentials(ctx, "nobody"); return ignore(err, pgstore.ErrUserNotFound) },
		func() error { _, err := s.Product(ctx, 1); return err },
		func() error { _, err := s.Product(ctx, 2); return ignore(err, pgstore.ErrProductNotFound) },
		func() error {
			_, err := s.PlaceOrder(ctx, pgstore.OrderRequest{UserID: user, ProductID: 1, Quantity: 1, Room: "r"})
			return err
		},
		func() error {
			_, err := s.PlaceOrder(ctx, pgstore.OrderRequest{UserID: user, ProductID: 1, Quantity: 1, Room: "r"})
			return ignore(err, pgstore.ErrOutOfStock)
		},
		func() error { _, err := s.Seed(ctx, pgstore.SeedOptions{Products: 1}); return err },
	}
	for i, call := range calls {
		if err := call(); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	// Refused before touching the database: no acquisition.
	if _, err := s.PlaceOrder(ctx, pgstore.OrderRequest{UserID: user, ProductID: 1, Quantity: 0}); err == nil {
		t.Fatal("PlaceOrder with quantity 0 succeeded")
	}

	want := uint64(len(calls))
	if got := histogramCount(t, s.reg, hold) - holdBefore; got != want {
		t.Errorf("%s count grew by %d, want %d", hold, got, want)
	}
	if got := histogramCount(t, s.reg, wait) - waitBefore; got != want {
		t.Errorf("%s count grew by %d, want %d", wait, got, want)
	}
	if got := poolGauge(t, s.reg, "acquired"); got != 0 {
		t.Errorf(`pool_connections{state="acquired"} = %v after all calls returned, want 0`, got)
	}
}

// ignore turns the expected refusal want into success, and anything else,
// including no error at all, into a failure.
func ignore(err, want error) error {
	if errors.Is(err, want) {
		return nil
	}
	return fmt.Errorf("got error %v, want %v", err, want)
}
