package pgstore_test

import (
	"errors"
	"fmt"
	"testing"

	"waitingroom/server/pgstore"
)

func TestSeedUsersUpsertsHash(t *testing.T) {
	t.Parallel()
	s := newStore(t, pgstore.Options{})
	const n = 10_000

	for _, hash := range []string{"hash-v1", "hash-v2"} {
		res := mustSeed(t, s.Store, pgstore.SeedOptions{Users: n, PasswordHash: []byte(hash)})
		if res.Users != n {
			t.Errorf("seed with %s: Users = %d, want %d", hash, res.Users, n)
		}
		for _, login := range []string{"user1", "user5000", fmt.Sprintf("user%d", n)} {
			_, got, err := s.Credentials(t.Context(), login)
			if err != nil {
				t.Fatalf("Credentials(%q): %v", login, err)
			}
			if string(got) != hash {
				t.Errorf("after seeding %s, %s has hash %q", hash, login, got)
			}
		}
	}
	if _, _, err := s.Credentials(t.Context(), fmt.Sprintf("user%d", n+1)); !errors.Is(err, pgstore.ErrUserNotFound) {
		t.Errorf("Credentials(user%d) error = %v, want ErrUserNotFound", n+1, err)
	}
	conn := mustConnect(t, s.url)
	if got := mustCount(t, conn, `SELECT count(*) FROM users`); got != n {
		t.Errorf("users rows after seeding twice = %d, want %d", got, n)
	}
}

func TestSeedProductsKeepsExisting(t *testing.T) {
	t.Parallel()
	s := newStore(t, pgstore.Options{})

	res := mustSeed(t, s.Store, pgstore.SeedOptions{Users: 1, PasswordHash: []byte("h"), Products: 3, Stock: 5})
	if got, want := res.ProductsCreated, 3; got != want {
		t.Errorf("first seed: ProductsCreated = %d, want %d", got, want)
	}
	got, err := s.Product(t.Context(), 2)
	if err != nil {
		t.Fatalf("Product(2): %v", err)
	}
	if want := (pgstore.Product{ID: 2, Name: "Demo product 2", Price: 2000, Stock: 5}); got != want {
		t.Errorf("Product(2) = %+v, want %+v", got, want)
	}
	user := mustUserID(t, s.Store, "user1")
	if _, err := s.PlaceOrder(t.Context(), pgstore.OrderRequest{UserID: user, ProductID: 1, Quantity: 1, Room: "r"}); err != nil {
		t.Fatalf("PlaceOrder: %v", err)
	}

	res = mustSeed(t, s.Store, pgstore.SeedOptions{Products: 4, Stock: 100})
	if got, want := res.ProductsCreated, 1; got != want {
		t.Errorf("second seed: ProductsCreated = %d, want %d", got, want)
	}
	if got, want := mustStock(t, s.Store, 1), int64(4); got != want {
		t.Errorf("product 1 stock after reseeding = %d, want %d (existing stock is kept)", got, want)
	}
	if got, want := mustStock(t, s.Store, 4), int64(100); got != want {
		t.Errorf("product 4 stock = %d, want %d", got, want)
	}

	// The sequence was moved past the explicit ids.
	conn := mustConnect(t, s.url)
	var id int64
	if err := conn.QueryRow(t.Context(),
		`INSERT INTO products (name, price, stock) VALUES ('extra', 1, 1) RETURNING id`).Scan(&id); err != nil {
		t.Fatalf("insert product without id: %v", err)
	}
	if id != 5 {
		t.Errorf("next product id = %d, want 5", id)
	}
}

func TestSeedRejectsInvalidOptions(t *testing.T) {
	t.Parallel()
	s := newStore(t, pgstore.Options{})
	for _, o := range []pgstore.SeedOptions{
		{Users: -1, PasswordHash: []byte("h")},
		{Products: -1},
		{Products: 1, Stock: -1},
		{Users: 1},
	} {
		if _, err := s.Seed(t.Context(), o); err == nil {
			t.Errorf("Seed(%+v) succeeded, want an error", o)
		}
	}
}
