package pgstore_test

import (
	"testing"

	"waitingroom/server/pgstore"
)

// PlaceOrder returns, and UserOrders reads back, the product's name and the
// unit price paid; UserOrders shows only the user's orders in the room,
// newest first, at most limit.
func TestUserOrders(t *testing.T) {
	t.Parallel()
	s := newStore(t, pgstore.Options{})
	mustSeed(t, s.Store, pgstore.SeedOptions{Users: 2, PasswordHash: []byte("h"), Products: 2, Stock: 100})
	u1, u2 := mustUserID(t, s.Store, "user1"), mustUserID(t, s.Store, "user2")
	place := func(user, product int64, qty int, room string) pgstore.Order {
		t.Helper()
		o, err := s.PlaceOrder(t.Context(), pgstore.OrderRequest{UserID: user, ProductID: product, Quantity: qty, Room: room})
		if err != nil {
			t.Fatalf("PlaceOrder: %v", err)
		}
		return o
	}

	first := place(u1, 2, 3, "default")
	if first.ProductName != "Demo product 2" || first.UnitPrice != 2000 || first.Total() != 6000 {
		t.Errorf("PlaceOrder = %+v, want Demo product 2 at 2000 cents, total 6000", first)
	}
	if got, err := s.UserOrders(t.Context(), u1, "default", 20); err != nil || len(got) != 1 || got[0] != first {
		t.Fatalf("UserOrders = %+v, %v; want [%+v]", got, err, first)
	}

	var placed []pgstore.Order
	for i := range 4 {
		placed = append(placed, place(u1, 1, i+1, "default"))
	}
	place(u2, 1, 1, "default") // another user's
	place(u1, 1, 1, "sale")    // another room's
	got, err := s.UserOrders(t.Context(), u1, "default", 3)
	if err != nil {
		t.Fatalf("UserOrders: %v", err)
	}
	if len(got) != 3 || got[0].ID != placed[3].ID || got[1].ID != placed[2].ID || got[2].ID != placed[1].ID {
		t.Fatalf("UserOrders limit 3 = %+v, want the last three of %+v, newest first", got, placed)
	}
	for _, o := range got {
		if o.UserID != u1 || o.Room != "default" || o.ProductName != "Demo product 1" || o.UnitPrice != 1000 {
			t.Errorf("order %+v: want user %d's in default, Demo product 1 at 1000", o, u1)
		}
	}
	if all, _ := s.UserOrders(t.Context(), u1, "default", 20); len(all) != 5 {
		t.Errorf("UserOrders limit 20 = %d orders, want 5", len(all))
	}

	// An order placed before prices were recorded shows the product's price.
	conn := mustConnect(t, s.url)
	if _, err := conn.Exec(t.Context(), `UPDATE orders SET unit_price = NULL WHERE id = $1`, first.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), `UPDATE products SET price = 2500 WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	all, err := s.UserOrders(t.Context(), u1, "default", 20)
	if err != nil || len(all) != 5 || all[4].ID != first.ID || all[4].UnitPrice != 2500 {
		t.Errorf("the oldest order without a recorded price = %+v, %v; want unit price 2500", all, err)
	}

	// None: an empty list, not nil.
	if none, err := s.UserOrders(t.Context(), u2, "sale", 20); err != nil || none == nil || len(none) != 0 {
		t.Errorf("UserOrders with none = %#v, %v; want an empty slice", none, err)
	}
}
