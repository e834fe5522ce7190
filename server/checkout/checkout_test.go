package checkout_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"waitingroom/queue"
	"waitingroom/queue/adaptive"
	"waitingroom/queue/queuetest"
	"waitingroom/server/checkout"
	"waitingroom/server/pgstore"
	"waitingroom/server/pgstore/pgtest"
)

const room = "sale"

// fixture is a Checkout on the real Redis and a fresh Postgres database
// with users user1 and user2 and product 1 (stock 3).
type fixture struct {
	q  *queue.Queue
	co *checkout.Checkout
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	rdb, prefix := queuetest.Redis(t)
	q := queue.New(rdb, queue.Options{Prefix: prefix})
	if err := q.EnsureRoom(t.Context(), room, queue.RoomConfig{Target: 10, EntryTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	store, err := pgstore.Open(t.Context(), pgtest.URL(t), pgstore.Options{PoolSize: 4})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(store.Close)
	if _, err := store.Seed(t.Context(), pgstore.SeedOptions{Users: 2, PasswordHash: []byte("x"), Products: 1, Stock: 3}); err != nil {
		t.Fatalf("Seed: %v", err)
	}
	co := checkout.New(checkout.Options{Store: store, Slots: q, Recorder: adaptive.NewRecorder(rdb, q, time.Minute), Timeout: 5 * time.Second})
	return fixture{q: q, co: co}
}

// mustGrant admits user at once and returns their entry token.
func (f fixture) mustGrant(t *testing.T, user string) string {
	t.Helper()
	st, err := f.q.Grant(t.Context(), room, user)
	if err != nil || st.EntryToken == "" {
		t.Fatalf("Grant(%s) = %+v, %v", user, st, err)
	}
	return st.EntryToken
}

func TestPlace(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	tok := f.mustGrant(t, "1")
	req := checkout.Request{Room: room, User: "1", ProductID: 1, Quantity: 2}

	res, err := f.co.Place(ctx, req)
	if res.Outcome != checkout.TokenInvalid || !errors.Is(err, checkout.ErrNoEntryToken) {
		t.Fatalf("no token: %+v, %v", res, err)
	}
	req.EntryToken = tok
	errLimited := errors.New("limited")
	limited := req
	limited.Limits = func(context.Context) error { return errLimited }
	if res, err := f.co.Place(ctx, limited); res.Outcome != "" || !errors.Is(err, errLimited) {
		t.Fatalf("limited: %+v, %v", res, err)
	}
	unknown := req
	unknown.ProductID = 99
	if res, err := f.co.Place(ctx, unknown); res.Outcome != checkout.ProductNotFound || !errors.Is(err, pgstore.ErrProductNotFound) {
		t.Fatalf("unknown product: %+v, %v", res, err)
	}
	// Neither the limit nor the unknown product spent the token.
	res, err = f.co.Place(ctx, req)
	if err != nil || res.Outcome != checkout.Placed || res.Order.ProductID != 1 || res.Order.Quantity != 2 {
		t.Fatalf("place: %+v, %v", res, err)
	}
	if res, err := f.co.Place(ctx, req); res.Outcome != checkout.TokenInvalid || !errors.Is(err, queue.ErrEntryTokenInvalid) {
		t.Fatalf("token spent twice: %+v, %v", res, err)
	}
}

// TestOutOfStock: a business refusal is an outcome; the slot is released
// and the token spent.
func TestOutOfStock(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	req := checkout.Request{Room: room, User: "2", EntryToken: f.mustGrant(t, "2"), ProductID: 1, Quantity: 4}
	res, err := f.co.Place(ctx, req)
	if res.Outcome != checkout.OutOfStock || !errors.Is(err, pgstore.ErrOutOfStock) {
		t.Fatalf("out of stock: %+v, %v", res, err)
	}
	req.Quantity = 1
	if res, err := f.co.Place(ctx, req); !errors.Is(err, queue.ErrEntryTokenInvalid) {
		t.Fatalf("the token outlived a business refusal: %+v, %v", res, err)
	}
}

func TestProduct(t *testing.T) {
	f := newFixture(t)
	if p, err := f.co.Product(t.Context(), 1); err != nil || p.ID != 1 {
		t.Fatalf("Product(1) = %+v, %v", p, err)
	}
	if _, err := f.co.Product(t.Context(), 2); !errors.Is(err, pgstore.ErrProductNotFound) {
		t.Fatalf("Product(2): %v, want ErrProductNotFound", err)
	}
}
