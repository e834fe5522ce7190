package checkout_test

import (
	"errors"
	"testing"
	"time"

	"waitingroom/server/checkout"
)

// TestOrders: an order placed through Place is read back by its user in
// its room, with the product's name and the price paid.
func TestOrders(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	res, err := f.co.Place(ctx, checkout.Request{Room: room, User: "1", EntryToken: f.mustGrant(t, "1"), ProductID: 1, Quantity: 2})
	if err != nil {
		t.Fatalf("Place: %v", err)
	}
	if o := res.Order; o.ProductName != "Demo product 1" || o.UnitPrice != 1000 || o.Total() != 2000 {
		t.Errorf("placed order %+v: want Demo product 1 at 1000 cents, total 2000", o)
	}
	got, err := f.co.Orders(ctx, "1", room)
	if err != nil || len(got) != 1 || got[0].ID != res.Order.ID || got[0].ProductName != "Demo product 1" {
		t.Fatalf("Orders(1) = %+v, %v; want the order placed", got, err)
	}
	for _, c := range []struct{ user, room string }{{"2", room}, {"1", "other"}, {"not-a-number", room}} {
		if got, err := f.co.Orders(ctx, c.user, c.room); err != nil || len(got) != 0 {
			t.Errorf("Orders(%s, %s) = %+v, %v; want none", c.user, c.room, got, err)
		}
	}
	bare := checkout.New(checkout.Options{Timeout: time.Second})
	if _, err := bare.Orders(ctx, "1", room); !errors.Is(err, checkout.ErrNoOrderReader) {
		t.Errorf("Orders without a reader: %v, want ErrNoOrderReader", err)
	}
}
