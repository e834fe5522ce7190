package main

import (
	"testing"
	"time"
)

// TestReadOwnOrders: after ordering, GET /api/v1/orders?room= with the
// access token shows the order — product name, unit price, total, when —
// newest first and only the caller's; the order's own answer carries the
// same fields. Without a valid access token it is a 401, without a room a
// 400.
func TestReadOwnOrders(t *testing.T) {
	e := newEnv(t)
	in := e.start(nil)
	access := in.login(user(1))
	list := func(bearer, query string) response {
		t.Helper()
		return do(t, "GET", in.base+"/api/v1/orders"+query, bearer, nil)
	}
	if r := list(access, "?room=default"); r.status != 200 || r.raw != `{"orders":[]}` {
		t.Fatalf("before ordering: %d %s, want 200 {\"orders\":[]}", r.status, r.raw)
	}

	var placed []response
	for _, o := range []struct{ product, qty int }{{2, 3}, {1, 1}} {
		qt := in.enter(user(1), "default").str("queueToken")
		in.admit("default")
		p := in.position("default", qt)
		r := in.order(qt, p.str("entryToken"), o.product, o.qty)
		if r.status != 201 || r.str("status") != "PLACED" || r.num("orderId") == 0 || r.num("quantity") != int64(o.qty) {
			t.Fatalf("order %+v = %d %s", o, r.status, r.raw)
		}
		placed = append(placed, r)
	}
	first := placed[0]
	if first.str("productName") != "Demo product 2" || first.num("unitPrice") != 2000 || first.num("total") != 6000 || first.num("productId") != 2 {
		t.Errorf("order answer %s: want Demo product 2, unitPrice 2000, total 6000", first.raw)
	}
	if at, err := time.Parse(time.RFC3339Nano, first.str("placedAt")); err != nil || time.Since(at) > time.Minute {
		t.Errorf("placedAt %q: %v", first.str("placedAt"), err)
	}
	// Another user's order is not shown.
	qt := in.enter(user(2), "default").str("queueToken")
	in.admit("default")
	if r := in.order(qt, in.position("default", qt).str("entryToken"), 1, 1); r.status != 201 {
		t.Fatalf("user2's order = %d %s", r.status, r.raw)
	}

	r := list(access, "?room=default")
	orders, _ := r.body["orders"].([]any)
	if r.status != 200 || len(orders) != 2 {
		t.Fatalf("GET orders = %d %s, want user1's two orders", r.status, r.raw)
	}
	for i, want := range []response{placed[1], placed[0]} { // newest first
		got, _ := orders[i].(map[string]any)
		for _, k := range []string{"orderId", "productId", "productName", "quantity", "unitPrice", "total", "status", "placedAt"} {
			if got[k] != want.body[k] {
				t.Errorf("orders[%d].%s = %v, want %v (the order's answer: %s)", i, k, got[k], want.body[k], want.raw)
			}
		}
	}
	if r := list(access, "?room=other"); r.status != 200 || r.raw != `{"orders":[]}` {
		t.Errorf("another room: %d %s, want no orders", r.status, r.raw)
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
		if r := list(c.bearer, c.query); r.status != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, r.status, r.raw, c.status)
		}
	}
}

// TestReadOwnOrdersLimited: one user flooding the order reads — each a
// database query — gets 429 in the contract's JSON; another user is served.
func TestReadOwnOrdersLimited(t *testing.T) {
	in := newEnv(t).start(limited(map[string]string{"WR_LIMIT_ORDERS_READ": "3/1m:3"}))
	a, b := in.login(user(1)), in.login(user(2))
	codes := map[int]int{}
	var last response
	for range 8 {
		r := do(t, "GET", in.base+"/api/v1/orders?room=default", a, nil)
		codes[r.status]++
		if r.status == 429 {
			last = r
		}
	}
	if codes[200] != 3 || codes[429] != 5 || last.str("error") != "rate_limited" || last.header.Get("Retry-After") == "" {
		t.Fatalf("one user's flood: %v, last refusal %d %s", codes, last.status, last.raw)
	}
	if r := do(t, "GET", in.base+"/api/v1/orders?room=default", b, nil); r.status != 200 {
		t.Fatalf("another user during the flood: %d %s", r.status, r.raw)
	}
}
