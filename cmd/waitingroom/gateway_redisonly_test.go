package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"waitingroom/queue"
	"waitingroom/server/admin"
	"waitingroom/server/pass"
)

// TestGatewayRedisOnly: gateway mode with DATABASE_URL unset runs on Redis
// alone. No Postgres is opened, /readyz checks none and the metrics name
// none; visitors queue and reach the origin with a pass; the admin API
// creates, changes and deletes rooms in Redis and says in a header that it
// records none; the built-in login and the order API answer 404 in the
// contract's form. After a Redis data loss the WR_ROOMS room comes back
// and the admin API's room does not.
func TestGatewayRedisOnly(t *testing.T) {
	o := startOrigin(t)
	e := newRedisOnlyEnv(t)
	in := e.start(map[string]string{"DATABASE_URL": "", "WR_UPSTREAM": o.srv.URL, "WR_PROTECT": "GET /checkout/*=sale",
		"WR_PASS_KEY": pass.GenerateKey(), "WR_ROOMS": "sale", "WR_ADMIT_INTERVAL": "20ms"})
	if in.main.store != nil || in.parts.Logins != nil || in.parts.Checkout != nil || in.parts.pool != nil {
		t.Fatal("a gateway without DATABASE_URL built Postgres parts")
	}

	r := do(t, "GET", in.admin+"/readyz", "", nil)
	if _, has := r.body["checks"].(map[string]any)["postgres"]; r.status != 200 || has ||
		readyzCheck(r, "redis") != "ok" || readyzCheck(r, "rooms") != "ok" {
		t.Fatalf("readyz = %d %s, want 200 checking redis and rooms only", r.status, r.raw)
	}
	loadSpec(t, in.admin+"/admin/openapi.json").call("GET", in.admin+"/readyz", "", nil, 200) // as described
	waitFor(t, "the readiness loop's first sample", func() bool {
		return strings.Contains(scrape(t, in), `waitingroom_dependency_up{dependency="redis"} 1`)
	})
	if text := scrape(t, in); strings.Contains(text, `dependency="postgres"`) || strings.Contains(text, "waitingroom_db_") {
		t.Fatalf("metrics of a Postgres the instance does not use:\n%s", grepLines(text, "postgres", "waitingroom_db_"))
	}

	// A visitor queues anonymously and reaches the origin with a pass.
	c := visitor(t)
	admitted(t, in, c, "sale")
	if code, _, m := call(t, c, "GET", in.base+"/checkout/cart", ""); code != 200 || m["uri"] != "/checkout/cart" {
		t.Fatalf("protected request with the pass: %d %v", code, m)
	}

	// The features that need Postgres are not there, said in the
	// contract's form (never a 500).
	for _, req := range []struct{ method, path, body string }{
		{"POST", "/_wr/api/v1/auth/login", `{"loginId":"user1","password":"pw"}`},
		{"POST", "/_wr/api/v1/orders", `{"productId":1,"quantity":1}`},
		{"GET", "/_wr/api/v1/orders?room=sale", ""},
		{"GET", "/_wr/api/v1/products/1", ""},
	} {
		code, _, m := call(t, c, req.method, in.base+req.path, req.body, "Content-Type", "application/json")
		if msg, _ := m["message"].(string); code != 404 || m["error"] != "not_found" || !strings.Contains(msg, "DATABASE_URL") {
			t.Errorf("%s %s: %d %v, want 404 not_found naming DATABASE_URL", req.method, req.path, code, m)
		}
	}

	// The admin API changes rooms in Redis, and says they are not recorded.
	for _, room := range []string{"sale", "flash"} {
		p := do(t, "PUT", in.admin+"/admin/rooms/"+room, testAdminToken, map[string]any{"targetActive": 7})
		if def := p.header.Get(admin.HeaderDefinition); p.status != 200 || p.num("targetActive") != 7 || !strings.HasPrefix(def, "not-recorded") || !strings.Contains(def, "only WR_ROOMS rooms") {
			t.Fatalf("PUT %s = %d %v %s, want 200 with %s: not-recorded", room, p.status, p.header, p.raw, admin.HeaderDefinition)
		}
	}
	if g := in.adminRoom("flash"); g.status != 200 || g.num("targetActive") != 7 {
		t.Fatalf("GET the admin API's room = %d %s", g.status, g.raw)
	}
	if code, _, m := call(t, visitor(t), "POST", in.base+"/_wr/api/v1/rooms/flash/enter", ""); code != 200 {
		t.Fatalf("anonymous enter to the admin API's room: %d %v", code, m)
	}
	if d := do(t, "DELETE", in.admin+"/admin/rooms/flash", testAdminToken, nil); d.status != 409 || d.str("error") != "room_not_empty" {
		t.Fatalf("DELETE a room someone waits in = %d %s, want 409 room_not_empty", d.status, d.raw)
	}
	if d := do(t, "DELETE", in.admin+"/admin/rooms/flash?force=true", testAdminToken, nil); d.status != 204 {
		t.Fatalf("DELETE ?force=true = %d %s, want 204", d.status, d.raw)
	}
	if g := in.adminRoom("flash"); g.status != 404 {
		t.Fatalf("GET the deleted room = %d %s, want 404", g.status, g.raw)
	}

	// A Redis data loss: the configured room comes back with the
	// configured defaults, the admin API's does not.
	if p := do(t, "PUT", in.admin+"/admin/rooms/flash", testAdminToken, map[string]any{"targetActive": 3}); p.status != 200 {
		t.Fatalf("PUT flash again = %d %s", p.status, p.raw)
	}
	ctx := context.Background()
	keys, err := e.rdb.Keys(ctx, e.prefix+"*").Result() // every key of this test's instance
	if err != nil || !slices.Contains(keys, in.parts.Queue.RoomKey("sale", queue.ConfigKey)) {
		t.Fatalf("the instance's keys: %v, %v; want room sale's configuration among them", keys, err)
	}
	if err := e.rdb.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
	// No check that sale is gone now: the instance's admission loop (every
	// 20 ms) may already have made it again, which is what is tested. Its
	// targetActive tells the room made again (the default, 5) from the one
	// the data loss should have taken (the PUT's 7).
	in.parts.Admitter.Resweep()
	waitFor(t, "the admission loop to create room sale again", func() bool {
		g := in.adminRoom("sale")
		return g.status == 200 && g.num("targetActive") == 5 // WR_TARGET_ACTIVE, not the PUT's 7
	})
	if g := in.adminRoom("flash"); g.status != 404 {
		t.Fatalf("the admin API's room after the loss = %d %s, want 404 (nothing recorded it)", g.status, g.raw)
	}
}

// grepLines are the lines of text that contain any of subs.
func grepLines(text string, subs ...string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		for _, s := range subs {
			if strings.Contains(l, s) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
