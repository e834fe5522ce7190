package pgstore_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"waitingroom/server/pgstore"
	"waitingroom/server/pgstore/pgtest"
)

func TestPlaceOrderOutcomes(t *testing.T) {
	t.Parallel()
	s := newStore(t, pgstore.Options{})
	mustSeed(t, s.Store, pgstore.SeedOptions{Users: 1, PasswordHash: []byte("h"), Products: 1, Stock: 3})
	user := mustUserID(t, s.Store, "user1")
	conn := mustConnect(t, s.url)

	got, err := s.PlaceOrder(t.Context(), pgstore.OrderRequest{UserID: user, ProductID: 1, Quantity: 2, Room: "default"})
	if err != nil {
		t.Fatalf("PlaceOrder: %v", err)
	}
	if got.ID <= 0 || got.UserID != user || got.ProductID != 1 || got.Quantity != 2 || got.Room != "default" || got.CreatedAt.IsZero() {
		t.Errorf("PlaceOrder = %+v, want a new order of 2 × product 1 by user %d in room default", got, user)
	}
	if n := mustCount(t, conn, `SELECT count(*) FROM orders WHERE id = $1 AND quantity = 2`, got.ID); n != 1 {
		t.Errorf("order %d rows = %d, want 1", got.ID, n)
	}
	if got, want := mustStock(t, s.Store, 1), int64(1); got != want {
		t.Fatalf("stock after ordering 2 of 3 = %d, want %d", got, want)
	}

	// Refusals change nothing: stock stays 1 and no order is written.
	for _, tc := range []struct {
		name string
		req  pgstore.OrderRequest
		want error
	}{
		{"more than stock", pgstore.OrderRequest{UserID: user, ProductID: 1, Quantity: 2}, pgstore.ErrOutOfStock},
		{"unknown product", pgstore.OrderRequest{UserID: user, ProductID: 999, Quantity: 1}, pgstore.ErrProductNotFound},
		{"unknown user", pgstore.OrderRequest{UserID: user + 1000, ProductID: 1, Quantity: 1}, pgstore.ErrUserNotFound},
		{"zero quantity", pgstore.OrderRequest{UserID: user, ProductID: 1, Quantity: 0}, pgstore.ErrInvalidQuantity},
		{"negative quantity", pgstore.OrderRequest{UserID: user, ProductID: 1, Quantity: -1}, pgstore.ErrInvalidQuantity},
		{"quantity beyond int32", pgstore.OrderRequest{UserID: user, ProductID: 1, Quantity: 1 << 31}, pgstore.ErrInvalidQuantity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.PlaceOrder(t.Context(), tc.req); !errors.Is(err, tc.want) {
				t.Errorf("PlaceOrder(%+v) error = %v, want %v", tc.req, err, tc.want)
			}
			if got, want := mustStock(t, s.Store, 1), int64(1); got != want {
				t.Errorf("stock = %d, want %d", got, want)
			}
			if got, want := mustCount(t, conn, `SELECT count(*) FROM orders`), int64(1); got != want {
				t.Errorf("orders rows = %d, want %d", got, want)
			}
		})
	}

	if _, err := s.PlaceOrder(t.Context(), pgstore.OrderRequest{UserID: user, ProductID: 1, Quantity: 1}); err != nil {
		t.Fatalf("PlaceOrder of the last unit: %v", err)
	}
	if _, err := s.PlaceOrder(t.Context(), pgstore.OrderRequest{UserID: user, ProductID: 1, Quantity: 1}); !errors.Is(err, pgstore.ErrOutOfStock) {
		t.Errorf("PlaceOrder at stock 0 error = %v, want ErrOutOfStock", err)
	}
}

// The row lock serialises concurrent orders: stock never goes negative and
// no unit is sold twice.
func TestPlaceOrderConcurrentOrdersNeverOversell(t *testing.T) {
	t.Parallel()
	s := newStore(t, pgstore.Options{})
	const stock, buyers = 50, 100
	mustSeed(t, s.Store, pgstore.SeedOptions{Users: buyers, PasswordHash: []byte("h"), Products: 1, Stock: stock})
	users := make([]int64, buyers)
	for i := range users {
		users[i] = mustUserID(t, s.Store, "user"+strconv.Itoa(i+1))
	}

	var (
		wg                 sync.WaitGroup
		mu                 sync.Mutex
		placed, outOfStock int
		unexpected         []error
	)
	start := make(chan struct{})
	for _, user := range users {
		wg.Go(func() {
			<-start
			_, err := s.PlaceOrder(t.Context(), pgstore.OrderRequest{UserID: user, ProductID: 1, Quantity: 1, Room: "r"})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				placed++
			case errors.Is(err, pgstore.ErrOutOfStock):
				outOfStock++
			default:
				unexpected = append(unexpected, err)
			}
		})
	}
	close(start)
	wg.Wait()

	for _, err := range unexpected {
		t.Errorf("unexpected error: %v", err)
	}
	if placed != stock || outOfStock != buyers-stock {
		t.Errorf("placed = %d, out of stock = %d; want %d and %d", placed, outOfStock, stock, buyers-stock)
	}
	if got := mustStock(t, s.Store, 1); got != 0 {
		t.Errorf("final stock = %d, want 0", got)
	}
	conn := mustConnect(t, s.url)
	if got := mustCount(t, conn, `SELECT count(DISTINCT user_id) FROM orders`); got != stock {
		t.Errorf("distinct buyers with an order = %d, want %d", got, stock)
	}
}

// A request that cannot finish in time is an infrastructure failure, not a
// refusal: the caller must be able to tell it from out of stock.
func TestPlaceOrderDeadlineIsNotABusinessError(t *testing.T) {
	t.Parallel()
	s := newStore(t, pgstore.Options{})
	mustSeed(t, s.Store, pgstore.SeedOptions{Users: 1, PasswordHash: []byte("h"), Products: 1, Stock: 5})
	user := mustUserID(t, s.Store, "user1")
	req := pgstore.OrderRequest{UserID: user, ProductID: 1, Quantity: 1, Room: "r"}

	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.PlaceOrder(canceled, req); !errors.Is(err, context.Canceled) || isSentinel(err) {
		t.Errorf("PlaceOrder with a canceled context: error = %v, want a wrapped context.Canceled", err)
	}

	// Another session holds the product's row lock past the order's deadline.
	locker := mustConnect(t, s.url)
	tx, err := locker.Begin(t.Context())
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	if _, err := tx.Exec(t.Context(), `SELECT 1 FROM products WHERE id = 1 FOR UPDATE`); err != nil {
		t.Fatalf("lock product: %v", err)
	}
	short, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, err := s.PlaceOrder(short, req); !errors.Is(err, context.DeadlineExceeded) || isSentinel(err) {
		t.Errorf("PlaceOrder blocked past its deadline: error = %v, want a wrapped context.DeadlineExceeded", err)
	}
	if err := tx.Rollback(t.Context()); err != nil {
		t.Fatalf("rollback: %v", err)
	}

	if _, err := s.PlaceOrder(t.Context(), req); err != nil {
		t.Fatalf("PlaceOrder after the lock was released: %v", err)
	}
	if got, want := mustStock(t, s.Store, 1), int64(4); got != want {
		t.Errorf("stock = %d, want %d (only the last order committed)", got, want)
	}
}

// When the database goes away, PlaceOrder reports an infrastructure error
// (never a business sentinel), and once it is back the pool reconnects.
func TestPlaceOrderDatabaseOutage(t *testing.T) {
	t.Parallel()
	s := newStoreAt(t, pgtest.DatabaseURL(t), pgstore.Options{}) // its connections are refused below
	mustSeed(t, s.Store, pgstore.SeedOptions{Users: 1, PasswordHash: []byte("h"), Products: 1, Stock: 10})
	user := mustUserID(t, s.Store, "user1")
	req := pgstore.OrderRequest{UserID: user, ProductID: 1, Quantity: 1, Room: "r"}
	if _, err := s.PlaceOrder(t.Context(), req); err != nil {
		t.Fatalf("PlaceOrder before the outage: %v", err)
	}

	cfg, err := pgx.ParseConfig(s.url)
	if err != nil {
		t.Fatal(err)
	}
	db := cfg.Database
	ident := pgx.Identifier{db}.Sanitize()
	admin := mustConnect(t, pgtest.AdminURL())
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := admin.Exec(t.Context(), sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}

	// Outage: refuse new connections and kill the existing ones.
	exec(`ALTER DATABASE ` + ident + ` ALLOW_CONNECTIONS false`)
	// With a timeout, pg_terminate_backend waits until each session is gone.
	exec(`SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE datname = $1`, db)
	if n := mustCount(t, admin, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1`, db); n != 0 {
		t.Fatalf("%d sessions of %s still alive after pg_terminate_backend", n, db)
	}

	// Each failed attempt discards the dead connection it was given; keep
	// ordering until the pool holds none, so every attempt is observed failing.
	attempts := 0
	for {
		attempts++
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		_, err := s.PlaceOrder(ctx, req)
		cancel()
		if err == nil {
			t.Fatalf("attempt %d: PlaceOrder succeeded during the outage", attempts)
		}
		if isSentinel(err) {
			t.Fatalf("attempt %d: PlaceOrder error = %v, a business error; want an infrastructure error", attempts, err)
		}
		if poolGauge(t, s.reg, "total") == 0 {
			break
		}
		if attempts > 100 {
			t.Fatalf("pool still holds %v connections after %d failed orders", poolGauge(t, s.reg, "total"), attempts)
		}
	}

	t.Logf("%d orders failed during the outage before the pool was empty", attempts)
	// With no connection left, the next order must dial, and the dial is refused.
	if _, err := s.PlaceOrder(t.Context(), req); err == nil || isSentinel(err) {
		t.Fatalf("PlaceOrder needing a new connection during the outage: error = %v, want an infrastructure error", err)
	} else {
		t.Logf("order needing a new connection: %v", err)
	}
	exec(`ALTER DATABASE ` + ident + ` ALLOW_CONNECTIONS true`)
	if _, err := s.PlaceOrder(t.Context(), req); err != nil {
		t.Fatalf("PlaceOrder after the database came back: %v", err)
	}
	if got, want := mustStock(t, s.Store, 1), int64(8); got != want {
		t.Errorf("stock = %d, want %d (two committed orders, none during the outage)", got, want)
	}
}
