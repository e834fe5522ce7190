package flow

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

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/pgstore/pgtest"
	"waitingroom/server/token"
)

func TestFullFlow(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(nil)
	a := in.Enter(systemtest.User(1), "default")
	b := in.Enter(systemtest.User(2), "default")
	if a.Str("status") != "WAITING" || a.Num("position") != 1 || a.Num("pollAfterMs") != 1000 || a.Str("queueToken") == "" {
		t.Fatalf("enter user1 = %s", a.Raw)
	}
	if b.Num("position") != 2 || b.Num("waiting") != 2 {
		t.Fatalf("enter user2 = %s", b.Raw)
	}
	if _, ok := a.Body["etaSeconds"]; ok || a.Body["etaKnown"] != false {
		t.Fatalf("an estimate before anything was measured: %s", a.Raw)
	}
	// Entering again keeps the place.
	if again := in.Enter(systemtest.User(1), "default"); again.Num("position") != 1 {
		t.Fatalf("re-enter = %s", again.Raw)
	}
	qt := a.Str("queueToken")
	if p := in.Position("default", qt); p.Status != 200 || p.Num("position") != 1 {
		t.Fatalf("position = %d %s", p.Status, p.Raw)
	}
	in.Admit("default")
	p := in.Position("default", qt)
	if p.Str("status") != "READY" || p.Str("entryToken") == "" || p.Num("pollAfterMs") != 0 {
		t.Fatalf("after admission position = %s", p.Raw)
	}
	exp, err := time.Parse(time.RFC3339, p.Str("entryExpiresAt"))
	if err != nil || time.Until(exp) < time.Minute {
		t.Fatalf("entryExpiresAt %q: %v", p.Str("entryExpiresAt"), err)
	}
	o := in.Order(qt, p.Str("entryToken"), 1, 2)
	if o.Status != 201 || o.Str("status") != "PLACED" || o.Num("quantity") != 2 || o.Num("orderId") == 0 {
		t.Fatalf("order = %d %s", o.Status, o.Raw)
	}
	if again := in.Order(qt, p.Str("entryToken"), 1, 2); again.Status != 403 || again.Str("error") != "entry_token_invalid" {
		t.Fatalf("second order with the same token = %d %s", again.Status, again.Raw)
	}
	if after := in.Position("default", qt); after.Status != 404 || after.Str("error") != "not_in_queue" {
		t.Fatalf("position after ordering = %d %s", after.Status, after.Raw)
	}
	if prod := systemtest.Do(t, "GET", in.Base+"/api/v1/products/1", "", nil); prod.Num("stock") != 998 {
		t.Fatalf("product after order = %s", prod.Raw)
	}
	// The slot was released: the admin view shows user2 admitted next.
	in.Admit("default")
	if r := in.AdminRoom("default"); r.Num("active") != 1 || r.Num("waiting") != 0 {
		t.Fatalf("room = %s", r.Raw)
	}
	// Leave gives up user2's entry window.
	if r := systemtest.Do(t, "POST", in.Base+"/api/v1/rooms/default/leave", b.Str("queueToken"), nil); r.Status != 204 {
		t.Fatalf("leave = %d %s", r.Status, r.Raw)
	}
	if r := in.AdminRoom("default"); r.Num("active") != 0 {
		t.Fatalf("after leave room = %s", r.Raw)
	}
}

func TestQueueCookieWorks(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(nil)
	req, _ := http.NewRequest("POST", in.Base+"/api/v1/rooms/default/enter", nil)
	req.Header.Set("Authorization", "Bearer "+in.Login(systemtest.User(1)))
	res, err := systemtest.Client.Do(req)
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
	req, _ = http.NewRequest("GET", in.Base+"/api/v1/rooms/default/position", nil)
	req.AddCookie(cookie)
	res, err = systemtest.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("position with cookie = %d", res.StatusCode)
	}
}

func TestBCryptRunsOnlyAtLogin(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(nil)
	access := in.Login(systemtest.User(1))
	if got := in.Metric("waitingroom_bcrypt_seconds"); got != 1 {
		t.Fatalf("bcrypt count after one login = %v", got)
	}
	r := systemtest.Do(t, "POST", in.Base+"/api/v1/rooms/default/enter", access, nil)
	qt := r.Str("queueToken")
	for range 20 {
		in.Position("default", qt)
	}
	in.Admit("default")
	p := in.Position("default", qt)
	in.Order(qt, p.Str("entryToken"), 1, 1)
	systemtest.Do(t, "POST", in.Base+"/api/v1/rooms/default/leave", qt, nil)
	if got := in.Metric("waitingroom_bcrypt_seconds"); got != 1 {
		t.Fatalf("bcrypt count after enter, 21 polls, an order and leave = %v, want still 1", got)
	}
	// An unknown login id and a wrong password still cost one verify each
	// (same timing as a real user), and both are 401.
	for _, body := range []map[string]string{{"loginId": "nobody", "password": "x"}, {"loginId": systemtest.User(1), "password": "wrong"}} {
		if r := systemtest.Do(t, "POST", in.Base+"/api/v1/auth/login", "", body); r.Status != 401 || r.Str("error") != "invalid_credentials" {
			t.Fatalf("login %v = %d %s", body, r.Status, r.Raw)
		}
	}
	if got := in.Metric("waitingroom_bcrypt_seconds"); got != 3 {
		t.Fatalf("bcrypt count = %v, want 3", got)
	}
}

func TestOneEntryTokenOneOrder(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(nil)
	alice := in.Enter(systemtest.User(1), "default")
	bob := in.Enter(systemtest.User(2), "default")
	in.Admit("default")
	aliceEntry := in.Position("default", alice.Str("queueToken")).Str("entryToken")
	// Bob presenting Alice's entry token is refused and spends nothing.
	if r := in.Order(bob.Str("queueToken"), aliceEntry, 1, 1); r.Status != 403 {
		t.Fatalf("bob with alice's token = %d %s", r.Status, r.Raw)
	}
	var created, refused atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			switch r := in.Order(alice.Str("queueToken"), aliceEntry, 1, 1); r.Status {
			case 201:
				created.Add(1)
			case 403:
				refused.Add(1)
			default:
				t.Errorf("order = %d %s", r.Status, r.Raw)
			}
		})
	}
	wg.Wait()
	if created.Load() != 1 || refused.Load() != 49 {
		t.Fatalf("50 concurrent orders with one token: %d created, %d refused; want 1 and 49", created.Load(), refused.Load())
	}
	if prod := systemtest.Do(t, "GET", in.Base+"/api/v1/products/1", "", nil); prod.Num("stock") != 999 {
		t.Fatalf("stock = %s, want 999", prod.Raw)
	}
}

func TestAdmittedBetweenPollsSeesReady(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_ADMIT_INTERVAL": "10ms", "WR_TARGET_ACTIVE": "3"})
	const users = 30
	tokens := make([]string, users)
	for i := range users {
		tokens[i] = in.Enter(systemtest.User(i+1), "default").Str("queueToken")
	}
	// Every user polls until READY, then orders (freeing the slot for the
	// next); not one poll may see 404 on the way.
	var wg sync.WaitGroup
	var polls atomic.Int64
	for i := range users {
		wg.Go(func() {
			for {
				p := in.Position("default", tokens[i])
				polls.Add(1)
				if p.Status != 200 {
					t.Errorf("user%d poll = %d %s (admitted users must see READY, never 404)", i+1, p.Status, p.Raw)
					return
				}
				if p.Str("status") == "READY" {
					if o := in.Order(tokens[i], p.Str("entryToken"), 1, 1); o.Status != 201 {
						t.Errorf("order = %d %s", o.Status, o.Raw)
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
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_TARGET_ACTIVE": "1", "WR_ENTRY_TTL": "1s"})
	alice := in.Enter(systemtest.User(1), "default")
	bob := in.Enter(systemtest.User(2), "default")
	in.Admit("default")
	entry := in.Position("default", alice.Str("queueToken")).Str("entryToken")
	systemtest.WaitFor(t, "alice's entry window to end", func() bool {
		return in.Position("default", alice.Str("queueToken")).Status == 404
	})
	if r := in.Position("default", alice.Str("queueToken")); r.Str("error") != "not_in_queue" {
		t.Fatalf("expired = %s", r.Raw)
	}
	if r := in.Order(alice.Str("queueToken"), entry, 1, 1); r.Status != 403 {
		t.Fatalf("order after the window = %d %s", r.Status, r.Raw)
	}
	// The slot returns to capacity: the next tick admits bob.
	if n := in.Admit("default"); n != 1 {
		t.Fatalf("admitted %d after expiry, want 1", n)
	}
	if r := in.Position("default", bob.Str("queueToken")); r.Str("status") != "READY" {
		t.Fatalf("bob = %s", r.Raw)
	}
	if r := in.AdminRoom("default"); r.Num("expired") != 1 {
		t.Fatalf("room = %s", r.Raw)
	}
}

func TestOutOfStockReleasesTheSlot(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_TARGET_ACTIVE": "1"})
	e.Exec("UPDATE products SET stock = 1 WHERE id = 2")
	alice := in.Enter(systemtest.User(1), "default")
	in.Enter(systemtest.User(2), "default")
	in.Admit("default")
	entry := in.Position("default", alice.Str("queueToken")).Str("entryToken")
	r := in.Order(alice.Str("queueToken"), entry, 2, 2)
	if r.Status != 409 || r.Str("error") != "out_of_stock" {
		t.Fatalf("order of 2 with stock 1 = %d %s", r.Status, r.Raw)
	}
	if r := in.Order(alice.Str("queueToken"), entry, 2, 1); r.Status != 403 {
		t.Fatalf("the token is consumed even though the order failed: got %d %s", r.Status, r.Raw)
	}
	if r := in.AdminRoom("default"); r.Num("active") != 0 {
		t.Fatalf("slot not released: %s", r.Raw)
	}
	if n := in.Admit("default"); n != 1 {
		t.Fatalf("admitted %d after release, want 1", n)
	}
}

func TestDatabaseDownDuringOrderKeepsTheToken(t *testing.T) {
	e := systemtest.NewEnvOwnDatabase(t) // its connections are refused below
	in := e.Start(map[string]string{"WR_ORDER_TIMEOUT": "2s"})
	alice := in.Enter(systemtest.User(1), "default")
	in.Admit("default")
	qt := alice.Str("queueToken")
	entry := in.Position("default", qt).Str("entryToken")

	pc, err := pgx.ParseConfig(e.DBURL)
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
	var r systemtest.Response
	for range 50 {
		r = in.Order(qt, entry, 1, 1)
		if r.Status != 503 {
			t.Fatalf("order with the database down = %d %s, want 503", r.Status, r.Raw)
		}
		if r.Header.Get("Retry-After") == "" {
			t.Fatalf("503 without Retry-After")
		}
		if p := in.Position("default", qt); p.Str("status") != "READY" || p.Str("entryToken") != entry {
			t.Fatalf("after a 503 the user must still hold the token: %s", p.Raw)
		}
		if strings.Contains(r.Str("message"), "kept") {
			break
		}
	}
	setAllow(true)
	systemtest.WaitFor(t, "the order to succeed after the database returns", func() bool {
		r = in.Order(qt, entry, 1, 1)
		return r.Status == 201
	})
	if p := systemtest.Do(t, "GET", in.Base+"/api/v1/products/1", "", nil); p.Num("stock") != 999 {
		t.Fatalf("stock = %s, want 999 (exactly one order)", p.Raw)
	}
}

func TestAdminChangesTargetLive(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "1"})
	for i := 1; i <= 8; i++ {
		in.Enter(systemtest.User(i), "default")
	}
	systemtest.WaitFor(t, "one admission", func() bool { return in.AdminRoom("default").Num("active") == 1 })
	if r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/default", "", map[string]any{"targetActive": 5}); r.Status != 401 {
		t.Fatalf("PUT without the admin token = %d", r.Status)
	}
	r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/default", systemtest.TestAdminToken, map[string]any{"targetActive": 5, "entryTtl": "90s"})
	if r.Status != 200 || r.Num("targetActive") != 5 || r.Str("entryTtl") != "1m30s" {
		t.Fatalf("PUT = %d %s", r.Status, r.Raw)
	}
	systemtest.WaitFor(t, "admission to follow targetActive=5", func() bool { return in.AdminRoom("default").Num("active") == 5 })
	// Pausing stops admission; a newcomer still gets a place in line.
	systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/default", systemtest.TestAdminToken, map[string]any{"paused": true, "targetActive": 8})
	if r := systemtest.Do(t, "POST", in.Base+"/api/v1/rooms/default/enter", in.Login(systemtest.User(20)), nil); r.Status != 200 || r.Str("status") != "WAITING" || r.Body["paused"] != true {
		t.Fatalf("enter paused room = %d %s, want WAITING, paused", r.Status, r.Raw)
	}
	if got := in.AdminRoom("default").Num("active"); got != 5 {
		t.Fatalf("paused room admitted: active %d", got)
	}
	// A new room created through the admin API is picked up by the loop.
	systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/concert", systemtest.TestAdminToken, map[string]any{"targetActive": 2})
	c := in.Enter(systemtest.User(30), "concert")
	systemtest.WaitFor(t, "the new room to admit", func() bool {
		return in.Position("concert", c.Str("queueToken")).Str("status") == "READY"
	})
}

func TestTwoInstancesNeverExceedTarget(t *testing.T) {
	e := systemtest.NewEnv(t)
	vars := map[string]string{"WR_ADMIT_INTERVAL": "10ms", "WR_TARGET_ACTIVE": "4"}
	a, b := e.Start(vars), e.Start(vars)
	const users = 40
	tokens := make([]string, users)
	for i := range users {
		in := a
		if i%2 == 1 {
			in = b
		}
		tokens[i] = in.Enter(systemtest.User(i+1), "default").Str("queueToken")
	}
	var wg sync.WaitGroup
	var ordered atomic.Int64
	for i := range users {
		wg.Go(func() {
			in := []*systemtest.Instance{a, b}[i%2]
			for {
				p := in.Position("default", tokens[i])
				if p.Status != 200 {
					t.Errorf("poll = %d %s", p.Status, p.Raw)
					return
				}
				if p.Str("status") == "READY" {
					if o := in.Order(tokens[i], p.Str("entryToken"), 1, 1); o.Status != 201 {
						t.Errorf("order = %d %s", o.Status, o.Raw)
					}
					ordered.Add(1)
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	var samples int
	systemtest.WaitFor(t, "everyone to order", func() bool {
		samples++
		if act := a.AdminRoom("default").Num("active"); act > 4 {
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
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_TARGET_ACTIVE": "1"})
	tok, _ := token.New(token.Config{Secret: systemtest.TestSecret}).IssueQueue("999999", "default", 0, time.Hour)
	if _, err := in.Parts.Queue.Enter(context.Background(), "default", "999999"); err != nil {
		t.Fatal(err)
	}
	in.Admit("default")
	entry := in.Position("default", tok).Str("entryToken")
	if r := in.Order(tok, entry, 1, 1); r.Status != 401 || r.Str("error") != "unauthorized" {
		t.Fatalf("order of a vanished user = %d %s", r.Status, r.Raw)
	}
	if r := in.AdminRoom("default"); r.Num("active") != 0 {
		t.Fatalf("slot not released: %s", r.Raw)
	}
}
