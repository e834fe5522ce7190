package gateway

import (
	"context"
	"slices"
	"strings"
	"testing"

	"waitingroom/cmd/waitingroom/systemtest"
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
	o := systemtest.StartOrigin(t)
	e := systemtest.NewRedisOnlyEnv(t)
	in := e.Start(map[string]string{"DATABASE_URL": "", "WR_UPSTREAM": o.Server.URL, "WR_PROTECT": "GET /checkout/*=sale",
		"WR_PASS_KEY": pass.GenerateKey(), "WR_ROOMS": "sale", "WR_ADMIT_INTERVAL": "20ms"})
	if in.Main.Store() != nil || in.Parts.Logins != nil || in.Parts.Checkout != nil || in.Parts.Pool != nil {
		t.Fatal("a gateway without DATABASE_URL built Postgres parts")
	}

	r := systemtest.Do(t, "GET", in.Admin+"/readyz", "", nil)
	if _, has := r.Body["checks"].(map[string]any)["postgres"]; r.Status != 200 || has ||
		systemtest.ReadyzCheck(r, "redis") != "ok" || systemtest.ReadyzCheck(r, "rooms") != "ok" {
		t.Fatalf("readyz = %d %s, want 200 checking redis and rooms only", r.Status, r.Raw)
	}
	systemtest.LoadSpec(t, in.Admin+"/admin/openapi.json").Call("GET", in.Admin+"/readyz", "", nil, 200) // as described
	systemtest.WaitFor(t, "the readiness loop's first sample", func() bool {
		return strings.Contains(systemtest.Scrape(t, in), `waitingroom_dependency_up{dependency="redis"} 1`)
	})
	if text := systemtest.Scrape(t, in); strings.Contains(text, `dependency="postgres"`) || strings.Contains(text, "waitingroom_db_") {
		t.Fatalf("metrics of a Postgres the instance does not use:\n%s", grepLines(text, "postgres", "waitingroom_db_"))
	}

	// A visitor queues anonymously and reaches the origin with a pass.
	c := systemtest.Visitor(t)
	admitted(t, in, c, "sale")
	if code, _, m := systemtest.Call(t, c, "GET", in.Base+"/checkout/cart", ""); code != 200 || m["uri"] != "/checkout/cart" {
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
		code, _, m := systemtest.Call(t, c, req.method, in.Base+req.path, req.body, "Content-Type", "application/json")
		if msg, _ := m["message"].(string); code != 404 || m["error"] != "not_found" || !strings.Contains(msg, "DATABASE_URL") {
			t.Errorf("%s %s: %d %v, want 404 not_found naming DATABASE_URL", req.method, req.path, code, m)
		}
	}

	// The admin API changes rooms in Redis, and says they are not recorded.
	for _, room := range []string{"sale", "flash"} {
		p := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/"+room, systemtest.TestAdminToken, map[string]any{"targetActive": 7})
		if def := p.Header.Get(admin.HeaderDefinition); p.Status != 200 || p.Num("targetActive") != 7 || !strings.HasPrefix(def, "not-recorded") || !strings.Contains(def, "only WR_ROOMS rooms") {
			t.Fatalf("PUT %s = %d %v %s, want 200 with %s: not-recorded", room, p.Status, p.Header, p.Raw, admin.HeaderDefinition)
		}
	}
	if g := in.AdminRoom("flash"); g.Status != 200 || g.Num("targetActive") != 7 {
		t.Fatalf("GET the admin API's room = %d %s", g.Status, g.Raw)
	}
	if code, _, m := systemtest.Call(t, systemtest.Visitor(t), "POST", in.Base+"/_wr/api/v1/rooms/flash/enter", ""); code != 200 {
		t.Fatalf("anonymous enter to the admin API's room: %d %v", code, m)
	}
	if d := systemtest.Do(t, "DELETE", in.Admin+"/admin/rooms/flash", systemtest.TestAdminToken, nil); d.Status != 409 || d.Str("error") != "room_not_empty" {
		t.Fatalf("DELETE a room someone waits in = %d %s, want 409 room_not_empty", d.Status, d.Raw)
	}
	if d := systemtest.Do(t, "DELETE", in.Admin+"/admin/rooms/flash?force=true", systemtest.TestAdminToken, nil); d.Status != 204 {
		t.Fatalf("DELETE ?force=true = %d %s, want 204", d.Status, d.Raw)
	}
	if g := in.AdminRoom("flash"); g.Status != 404 {
		t.Fatalf("GET the deleted room = %d %s, want 404", g.Status, g.Raw)
	}

	// A Redis data loss: the configured room comes back with the
	// configured defaults, the admin API's does not.
	if p := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/flash", systemtest.TestAdminToken, map[string]any{"targetActive": 3}); p.Status != 200 {
		t.Fatalf("PUT flash again = %d %s", p.Status, p.Raw)
	}
	ctx := context.Background()
	keys, err := e.Redis.Keys(ctx, e.Prefix+"*").Result() // every key of this test's instance
	if err != nil || !slices.Contains(keys, in.Parts.Queue.RoomKey("sale", queue.ConfigKey)) {
		t.Fatalf("the instance's keys: %v, %v; want room sale's configuration among them", keys, err)
	}
	if err := e.Redis.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
	// No check that sale is gone now: the instance's admission loop (every
	// 20 ms) may already have made it again, which is what is tested. Its
	// targetActive tells the room made again (the default, 5) from the one
	// the data loss should have taken (the PUT's 7).
	in.Parts.Admitter.Resweep()
	systemtest.WaitFor(t, "the admission loop to create room sale again", func() bool {
		g := in.AdminRoom("sale")
		return g.Status == 200 && g.Num("targetActive") == 5 // WR_TARGET_ACTIVE, not the PUT's 7
	})
	if g := in.AdminRoom("flash"); g.Status != 404 {
		t.Fatalf("the admin API's room after the loss = %d %s, want 404 (nothing recorded it)", g.Status, g.Raw)
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
