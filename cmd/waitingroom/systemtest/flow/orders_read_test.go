package flow

import (
	"testing"
	"time"

	"waitingroom/cmd/waitingroom/systemtest"
)

// TestReadOwnOrders: after ordering, GET /api/v1/orders?room= with the
// access token shows the order — product name, unit price, total, when —
// newest first and only the caller's; the order's own answer carries the
// same fields. Without a valid access token it is a 401, without a room a
// 400.
func TestReadOwnOrders(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(nil)
	access := in.Login(systemtest.User(1))
	list := func(bearer, query string) systemtest.Response {
		t.Helper()
		return systemtest.Do(t, "GET", in.Base+"/api/v1/orders"+query, bearer, nil)
	}
	if r := list(access, "?room=default"); r.Status != 200 || r.Raw != `{"orders":[]}` {
		t.Fatalf("before ordering: %d %s, want 200 {\"orders\":[]}", r.Status, r.Raw)
	}

	var placed []systemtest.Response
	for _, o := range []struct{ product, qty int }{{2, 3}, {1, 1}} {
		qt := in.Enter(systemtest.User(1), "default").Str("queueToken")
		in.Admit("default")
		p := in.Position("default", qt)
		r := in.Order(qt, p.Str("entryToken"), o.product, o.qty)
		if r.Status != 201 || r.Str("status") != "PLACED" || r.Num("orderId") == 0 || r.Num("quantity") != int64(o.qty) {
			t.Fatalf("order %+v = %d %s", o, r.Status, r.Raw)
		}
		placed = append(placed, r)
	}
	first := placed[0]
	if first.Str("productName") != "Demo product 2" || first.Num("unitPrice") != 2000 || first.Num("total") != 6000 || first.Num("productId") != 2 {
		t.Errorf("order answer %s: want Demo product 2, unitPrice 2000, total 6000", first.Raw)
	}
	if at, err := time.Parse(time.RFC3339Nano, first.Str("placedAt")); err != nil || time.Since(at) > time.Minute {
		t.Errorf("placedAt %q: %v", first.Str("placedAt"), err)
	}
	// Another user's order is not shown.
	qt := in.Enter(systemtest.User(2), "default").Str("queueToken")
	in.Admit("default")
	if r := in.Order(qt, in.Position("default", qt).Str("entryToken"), 1, 1); r.Status != 201 {
		t.Fatalf("user2's order = %d %s", r.Status, r.Raw)
	}

	r := list(access, "?room=default")
	orders, _ := r.Body["orders"].([]any)
	if r.Status != 200 || len(orders) != 2 {
		t.Fatalf("GET orders = %d %s, want user1's two orders", r.Status, r.Raw)
	}
	for i, want := range []systemtest.Response{placed[1], placed[0]} { // newest first
		got, _ := orders[i].(map[string]any)
		for _, k := range []string{"orderId", "productId", "productName", "quantity", "unitPrice", "total", "status", "placedAt"} {
			if got[k] != want.Body[k] {
				t.Errorf("orders[%d].%s = %v, want %v (the order's answer: %s)", i, k, got[k], want.Body[k], want.Raw)
			}
		}
	}
	if r := list(access, "?room=other"); r.Status != 200 || r.Raw != `{"orders":[]}` {
		t.Errorf("another room: %d %s, want no orders", r.Status, r.Raw)
	}

	for _, c := range []struct {
		name, bearer, query string
		status              int
	}{
		{"no token", "", "?room=default", 401},
		{"a bad token", "not-a-token", "?room=default", 401},
		{"a queue token", qt, "?room=default", 401},
		{"no room", access, "", 400},
		{"a bad room", access, "?room=Bad%20Room", 400},
	} {
		if r := list(c.bearer, c.query); r.Status != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, r.Status, r.Raw, c.status)
		}
	}
}

// TestReadOwnOrdersLimited: one user flooding the order reads — each a
// database query — gets 429 in the contract's JSON; another user is served.
func TestReadOwnOrdersLimited(t *testing.T) {
	in := systemtest.NewEnv(t).Start(systemtest.Limited(map[string]string{"WR_LIMIT_ORDERS_READ": "3/1m:3"}))
	a, b := in.Login(systemtest.User(1)), in.Login(systemtest.User(2))
	codes := map[int]int{}
	var last systemtest.Response
	for range 8 {
		r := systemtest.Do(t, "GET", in.Base+"/api/v1/orders?room=default", a, nil)
		codes[r.Status]++
		if r.Status == 429 {
			last = r
		}
	}
	if codes[200] != 3 || codes[429] != 5 || last.Str("error") != "rate_limited" || last.Header.Get("Retry-After") == "" {
		t.Fatalf("one user's flood: %v, last refusal %d %s", codes, last.Status, last.Raw)
	}
	if r := systemtest.Do(t, "GET", in.Base+"/api/v1/orders?room=default", b, nil); r.Status != 200 {
		t.Fatalf("another user during the flood: %d %s", r.Status, r.Raw)
	}
}
