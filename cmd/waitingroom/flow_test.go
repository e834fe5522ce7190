package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"waitingroom/server/pgstore/pgtest"
	"waitingroom/server/token"
)

func TestFullFlow(t *testing.T) {
	e := newEnv(t)
	in := e.start(nil)
	a := in.enter(user(1), "default")
	b := in.enter(user(2), "default")
	if a.str("status") != "WAITING" || a.num("position") != 1 || a.num("pollAfterMs") != 1000 || a.str("queueToken") == "" {
		t.Fatalf("enter user1 = %s", a.raw)
	}
	if b.num("position") != 2 || b.num("waiting") != 2 {
		t.Fatalf("enter user2 = %s", b.raw)
	}
	if _, ok := a.body["etaSeconds"]; ok || a.body["etaKnown"] != false {
		t.Fatalf("an estimate before anything was measured: %s", a.raw)
	}
	// Entering again keeps the place.
	if again := in.enter(user(1), "default"); again.num("position") != 1 {
		t.Fatalf("re-enter = %s", again.raw)
	}
	qt := a.str("queueToken")
	if p := in.position("default", qt); p.status != 200 || p.num("position") != 1 {
		t.Fatalf("position = %d %s", p.status, p.raw)
	}
	in.admit("default")
	p := in.position("default", qt)
	if p.str("status") != "READY" || p.str("entryToken") == "" || p.num("pollAfterMs") != 0 {
		t.Fatalf("after admission position = %s", p.raw)
	}
	exp, err := time.Parse(time.RFC3339, p.str("entryExpiresAt"))
	if err != nil || time.Until(exp) < time.Minute {
		t.Fatalf("entryExpiresAt %q: %v", p.str("entryExpiresAt"), err)
	}
	o := in.order(qt, p.str("entryToken"), 1, 2)
	if o.status != 201 || o.str("status") != "PLACED" || o.num("quantity") != 2 || o.num("orderId") == 0 {
		t.Fatalf("order = %d %s", o.status, o.raw)
	}
	if again := in.order(qt, p.str("entryToken"), 1, 2); again.status != 403 || again.str("error") != "entry_token_invalid" {
		t.Fatalf("second order with the same token = %d %s", again.status, again.raw)
	}
	if after := in.position("default", qt); after.status != 404 || after.str("error") != "not_in_queue" {
		t.Fatalf("position after ordering = %d %s", after.status, after.raw)
	}
	if prod := do(t, "GET", in.base+"/api/v1/products/1", "", nil); prod.num("stock") != 998 {
		t.Fatalf("product after order = %s", prod.raw)
	}
	// The slot was released: the admin view shows user2 admitted next.
	in.admit("default")
	if r := in.adminRoom("default"); r.num("active") != 1 || r.num("waiting") != 0 {
		t.Fatalf("room = %s", r.raw)
	}
	// Leave gives up user2's entry window.
	if r := do(t, "POST", in.base+"/api/v1/rooms/default/leave", b.str("queueToken"), nil); r.status != 204 {
		t.Fatalf("leave = %d %s", r.status, r.raw)
	}
	if r := in.adminRoom("default"); r.num("active") != 0 {
		t.Fatalf("after leave room = %s", r.raw)
	}
}

func TestQueueCookieWorks(t *testing.T) {
	e := newEnv(t)
	in := e.start(nil)
	req, _ := http.NewRequest("POST", in.base+"/api/v1/rooms/default/enter", nil)
	req.Header.Set("Authorization", "Bearer "+in.login(user(1)))
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var cookie *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == "wr_queue" {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.Path != "/api/v1" || cookie.SameSite != http.SameSiteLaxMode {
		t.Fatalf("wr_queue cookie = %+v", cookie)
	}
	req, _ = http.NewRequest("GET", in.base+"/api/v1/rooms/default/position", nil)
	req.AddCookie(cookie)
	res, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("position with cookie = %d", res.StatusCode)
	}
}

func TestBCryptRunsOnlyAtLogin(t *testing.T) {
	e := newEnv(t)
	in := e.start(nil)
	access := in.login(user(1))
	if got := in.metric("waitingroom_bcrypt_seconds"); got != 1 {
		t.Fatalf("bcrypt count after one login = %v", got)
	}
	r := do(t, "POST", in.base+"/api/v1/rooms/default/enter", access, nil)
	qt := r.str("queueToken")
	for range 20 {
		in.position("default", qt)
	}
	in.admit("default")
	p := in.position("default", qt)
	in.order(qt, p.str("entryToken"), 1, 1)
	do(t, "POST", in.base+"/api/v1/rooms/default/leave", qt, nil)
	if got := in.metric("waitingroom_bcrypt_seconds"); got != 1 {
		t.Fatalf("bcrypt count after enter, 21 polls, an order and leave = %v, want still 1", got)
	}
	// An unknown login id and a wrong password still cost one verify each
	// (same timing as a real user), and both are 401.
	for _, body := range []map[string]string{{"loginId": "nobody", "password": "x"}, {"loginId": user(1), "password": "wrong"}} {
		if r := do(t, "POST", in.base+"/api/v1/auth/login", "", body); r.status != 401 || r.str("error") != "invalid_credentials" {
			t.Fatalf("login %v = %d %s", body, r.status, r.raw)
		}
	}
	if got := in.metric("waitingroom_bcrypt_seconds"); got != 3 {
		t.Fatalf("bcrypt count = %v, want 3", got)
	}
}

func TestOneEntryTokenOneOrder(t *testing.T) {
	e := newEnv(t)
	in := e.start(nil)
	alice := in.enter(user(1), "default")
	bob := in.enter(user(2), "default")
	in.admit("default")
	aliceEntry := in.position("default", alice.str("queueToken")).str("entryToken")
	// Bob presenting Alice's entry token is refused and spends nothing.
	if r := in.order(bob.str("queueToken"), aliceEntry, 1, 1); r.status != 403 {
		t.Fatalf("bob with alice's token = %d %s", r.status, r.raw)
	}
	var created, refused atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			switch r := in.order(alice.str("queueToken"), aliceEntry, 1, 1); r.status {
			case 201:
				created.Add(1)
			case 403:
				refused.Add(1)
			default:
				t.Errorf("order = %d %s", r.status, r.raw)
			}
		})
	}
	wg.Wait()
	if created.Load() != 1 || refused.Load() != 49 {
		t.Fatalf("50 concurrent orders with one token: %d created, %d refused; want 1 and 49", created.Load(), refused.Load())
	}
	if prod := do(t, "GET", in.base+"/api/v1/products/1", "", nil); prod.num("stock") != 999 {
		t.Fatalf("stock = %s, want 999", prod.raw)
	}
}

func TestAdmittedBetweenPollsSeesReady(t *testing.T) {
	e := newEnv(t)
	in := e.start(map[string]string{"WR_ADMIT_INTERVAL": "10ms", "WR_TARGET_ACTIVE": "3"})
	const users = 30
	tokens := make([]string, users)
	for i := range users {
		tokens[i] = in.enter(user(i+1), "default").str("queueToken")
	}
	// Every user polls until READY, then orders (freeing the slot for the
	// next); not one poll may see 404 on the way.
	var wg sync.WaitGroup
	var polls atomic.Int64
	for i := range users {
		wg.Go(func() {
			for {
				p := in.position("default", tokens[i])
				polls.Add(1)
				if p.status != 200 {
					t.Errorf("user%d poll = %d %s (admitted users must see READY, never 404)", i+1, p.status, p.raw)
					return
				}
				if p.str("status") == "READY" {
					if o := in.order(tokens[i], p.str("entryToken"), 1, 1); o.status != 201 {
						t.Errorf("order = %d %s", o.status, o.raw)
					}
					return
				}
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	t.Logf("%d polls, no 404", polls.Load())
}

func TestExpiredEntryWindow(t *testing.T) {
	e := newEnv(t)
	in := e.start(map[string]string{"WR_TARGET_ACTIVE": "1", "WR_ENTRY_TTL": "1s"})
	alice := in.enter(user(1), "default")
	bob := in.enter(user(2), "default")
	in.admit("default")
	entry := in.position("default", alice.str("queueToken")).str("entryToken")
	waitFor(t, "alice's entry window to end", func() bool {
		return in.position("default", alice.str("queueToken")).status == 404
	})
	if r := in.position("default", alice.str("queueToken")); r.str("error") != "not_in_queue" {
		t.Fatalf("expired = %s", r.raw)
	}
	if r := in.order(alice.str("queueToken"), entry, 1, 1); r.status != 403 {
		t.Fatalf("order after the window = %d %s", r.status, r.raw)
	}
	// The slot returns to capacity: the next tick admits bob.
	if n := in.admit("default"); n != 1 {
		t.Fatalf("admitted %d after expiry, want 1", n)
	}
	if r := in.position("default", bob.str("queueToken")); r.str("status") != "READY" {
		t.Fatalf("bob = %s", r.raw)
	}
	if r := in.adminRoom("default"); r.num("expired") != 1 {
		t.Fatalf("room = %s", r.raw)
	}
}

func TestOutOfStockReleasesTheSlot(t *testing.T) {
	e := newEnv(t)
	in := e.start(map[string]string{"WR_TARGET_ACTIVE": "1"})
	e.exec("UPDATE products SET stock = 1 WHERE id = 2")
	alice := in.enter(user(1), "default")
	in.enter(user(2), "default")
	in.admit("default")
	entry := in.position("default", alice.str("queueToken")).str("entryToken")
	r := in.order(alice.str("queueToken"), entry, 2, 2)
	if r.status != 409 || r.str("error") != "out_of_stock" {
		t.Fatalf("order of 2 with stock 1 = %d %s", r.status, r.raw)
	}
	if r := in.order(alice.str("queueToken"), entry, 2, 1); r.status != 403 {
		t.Fatalf("the token is consumed even though the order failed: got %d %s", r.status, r.raw)
	}
	if r := in.adminRoom("default"); r.num("active") != 0 {
		t.Fatalf("slot not released: %s", r.raw)
	}
	if n := in.admit("default"); n != 1 {
		t.Fatalf("admitted %d after release, want 1", n)
	}
}

func TestDatabaseDownDuringOrderKeepsTheToken(t *testing.T) {
	e := newEnvOwnDatabase(t) // its connections are refused below
	in := e.start(map[string]string{"WR_ORDER_TIMEOUT": "2s"})
	alice := in.enter(user(1), "default")
	in.admit("default")
	qt := alice.str("queueToken")
	entry := in.position("default", qt).str("entryToken")

	pc, err := pgx.ParseConfig(e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	dbName := pc.Database
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pgtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(ctx) }) // after the cleanup below re-allows connections
	setAllow := func(allow bool) {
		t.Helper()
		if _, err := admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s ALLOW_CONNECTIONS %t", pgx.Identifier{dbName}.Sanitize(), allow)); err != nil {
			t.Fatal(err)
		}
		if !allow {
			if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", dbName); err != nil {
				t.Fatal(err)
			}
		}
	}
	setAllow(false)
	t.Cleanup(func() { setAllow(true) })

	// Orders fail with 503 (never 500) while the database refuses us; each
	// failure gives the token back. Broken pooled connections may take a
	// few attempts to drain, so retry a bounded number of times.
	var r response
	for range 50 {
		r = in.order(qt, entry, 1, 1)
		if r.status != 503 {
			t.Fatalf("order with the database down = %d %s, want 503", r.status, r.raw)
		}
		if r.header.Get("Retry-After") == "" {
			t.Fatalf("503 without Retry-After")
		}
		if p := in.position("default", qt); p.str("status") != "READY" || p.str("entryToken") != entry {
			t.Fatalf("after a 503 the user must still hold the token: %s", p.raw)
		}
		if strings.Contains(r.str("message"), "kept") {
			break
		}
	}
	setAllow(true)
	waitFor(t, "the order to succeed after the database returns", func() bool {
		r = in.order(qt, entry, 1, 1)
		return r.status == 201
	})
	if p := do(t, "GET", in.base+"/api/v1/products/1", "", nil); p.num("stock") != 999 {
		t.Fatalf("stock = %s, want 999 (exactly one order)", p.raw)
	}
}

func TestAdminChangesTargetLive(t *testing.T) {
	e := newEnv(t)
	in := e.start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "1"})
	for i := 1; i <= 8; i++ {
		in.enter(user(i), "default")
	}
	waitFor(t, "one admission", func() bool { return in.adminRoom("default").num("active") == 1 })
	if r := do(t, "PUT", in.admin+"/admin/rooms/default", "", map[string]any{"targetActive": 5}); r.status != 401 {
		t.Fatalf("PUT without the admin token = %d", r.status)
	}
	r := do(t, "PUT", in.admin+"/admin/rooms/default", testAdminToken, map[string]any{"targetActive": 5, "entryTtl": "90s"})
	if r.status != 200 || r.num("targetActive") != 5 || r.str("entryTtl") != "1m30s" {
		t.Fatalf("PUT = %d %s", r.status, r.raw)
	}
	waitFor(t, "admission to follow targetActive=5", func() bool { return in.adminRoom("default").num("active") == 5 })
	// Pausing stops admission; a newcomer still gets a place in line.
	do(t, "PUT", in.admin+"/admin/rooms/default", testAdminToken, map[string]any{"paused": true, "targetActive": 8})
	if r := do(t, "POST", in.base+"/api/v1/rooms/default/enter", in.login(user(20)), nil); r.status != 200 || r.str("status") != "WAITING" || r.body["paused"] != true {
		t.Fatalf("enter paused room = %d %s, want WAITING, paused", r.status, r.raw)
	}
	if got := in.adminRoom("default").num("active"); got != 5 {
		t.Fatalf("paused room admitted: active %d", got)
	}
	// A new room created through the admin API is picked up by the loop.
	do(t, "PUT", in.admin+"/admin/rooms/concert", testAdminToken, map[string]any{"targetActive": 2})
	c := in.enter(user(30), "concert")
	waitFor(t, "the new room to admit", func() bool {
		return in.position("concert", c.str("queueToken")).str("status") == "READY"
	})
}

func TestTwoInstancesNeverExceedTarget(t *testing.T) {
	e := newEnv(t)
	vars := map[string]string{"WR_ADMIT_INTERVAL": "10ms", "WR_TARGET_ACTIVE": "4"}
	a, b := e.start(vars), e.start(vars)
	const users = 40
	tokens := make([]string, users)
	for i := range users {
		in := a
		if i%2 == 1 {
			in = b
		}
		tokens[i] = in.enter(user(i+1), "default").str("queueToken")
	}
	var wg sync.WaitGroup
	var ordered atomic.Int64
	for i := range users {
		wg.Go(func() {
			in := []*instance{a, b}[i%2]
			for {
				p := in.position("default", tokens[i])
				if p.status != 200 {
					t.Errorf("poll = %d %s", p.status, p.raw)
					return
				}
				if p.str("status") == "READY" {
					if o := in.order(tokens[i], p.str("entryToken"), 1, 1); o.status != 201 {
						t.Errorf("order = %d %s", o.status, o.raw)
					}
					ordered.Add(1)
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	var samples int
	waitFor(t, "everyone to order", func() bool {
		samples++
		if act := a.adminRoom("default").num("active"); act > 4 {
			t.Fatalf("active %d > targetActive 4", act)
		}
		return ordered.Load() == users || t.Failed()
	})
	wg.Wait()
	t.Logf("%d samples of active, all <= 4", samples)
}

// TestOrderOfAVanishedUser: a valid queue token whose user the database no
// longer has gets 401, and the slot is released.
func TestOrderOfAVanishedUser(t *testing.T) {
	e := newEnv(t)
	in := e.start(map[string]string{"WR_TARGET_ACTIVE": "1"})
	tok, _ := token.New(token.Config{Secret: testSecret}).IssueQueue("999999", "default", 0, time.Hour)
	if _, err := in.parts.Queue.Enter(context.Background(), "default", "999999"); err != nil {
		t.Fatal(err)
	}
	in.admit("default")
	entry := in.position("default", tok).str("entryToken")
	if r := in.order(tok, entry, 1, 1); r.status != 401 || r.str("error") != "unauthorized" {
		t.Fatalf("order of a vanished user = %d %s", r.status, r.raw)
	}
	if r := in.adminRoom("default"); r.num("active") != 0 {
		t.Fatalf("slot not released: %s", r.raw)
	}
}
