package hostile

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/cmd/waitingroom/compose"
	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/queue"
	"waitingroom/queue/queuetest"
	"waitingroom/server/token"
)

// TestLoginLimitSharedAcrossInstances: a burst spread over two instances is
// limited as one, and refused logins never reach BCrypt.
func TestLoginLimitSharedAcrossInstances(t *testing.T) {
	e := systemtest.NewEnv(t)
	vars := systemtest.Limited(map[string]string{"WR_LIMIT_LOGIN_ID": "3/1h:3"})
	a, b := e.Start(vars), e.Start(vars)
	codes := map[int]int{}
	for i := range 8 {
		in := []*systemtest.Instance{a, b}[i%2]
		r := systemtest.Do(t, "POST", in.Base+"/api/v1/auth/login", "", map[string]string{"loginId": systemtest.User(1), "password": "wrong"})
		codes[r.Status]++
		if r.Status == 429 && (r.Header.Get("Retry-After") == "" || r.Str("error") != "rate_limited") {
			t.Fatalf("429 without Retry-After or contract body: %v %s", r.Header, r.Raw)
		}
	}
	if codes[401] != 3 || codes[429] != 5 {
		t.Fatalf("codes %v, want 3×401 and 5×429", codes)
	}
	if n := a.Metric("waitingroom_bcrypt_seconds") + b.Metric("waitingroom_bcrypt_seconds"); n != 3 {
		t.Fatalf("%v BCrypt verifications, want 3 (refused logins never reach BCrypt)", n)
	}
	if n := a.Metric("waitingroom_rate_limited_total") + b.Metric("waitingroom_rate_limited_total"); n != 5 {
		t.Fatalf("rate_limited_total = %v, want 5", n)
	}
}

// TestCredentialStuffingFromOneIP: 2,000 logins with wrong passwords and
// different login ids from one address, 32 at a time, cost as many BCrypt
// verifications as the per-address failure budget allows plus at most the
// attempts in flight when it ran out (login_ip is peeked before BCrypt and
// charged after, so that successes behind a NAT never count: login/limits.go),
// not 2,000.
func TestCredentialStuffingFromOneIP(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(systemtest.Limited(map[string]string{"WR_LIMIT_LOGIN_IP": "30/1h:30"}))
	var refused atomic.Int64
	var mu sync.Mutex
	other := map[int]string{}
	var wg sync.WaitGroup
	const concurrency = 32
	sem := make(chan struct{}, concurrency)
	for i := range 2000 {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r := systemtest.Do(t, "POST", in.Base+"/api/v1/auth/login", "", map[string]string{"loginId": "victim" + strconv.Itoa(i), "password": "guess"})
			switch r.Status {
			case 429:
				refused.Add(1)
			case 401:
			default:
				mu.Lock()
				other[r.Status] = r.Raw
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(other) > 0 {
		t.Fatalf("answers other than 401 and 429: %v", other)
	}
	verifies := in.Metric("waitingroom_bcrypt_seconds")
	if verifies < 30 || verifies > 30+concurrency-1 || int64(verifies)+refused.Load() != 2000 {
		t.Fatalf("%v BCrypt verifications and %d refusals for 2,000 attempts; want 30 to %d verifications, the rest refused", verifies, refused.Load(), 30+concurrency-1)
	}
	t.Logf("2,000 stuffing attempts from one IP: %v BCrypt verifications, %d refused with 429", verifies, refused.Load())
}

// TestRefreshStormIsRefusedAndPlaceKept: one token polling far faster than
// its band gets 429 with an honest Retry-After; its place is untouched and
// other users' polls are unaffected.
func TestRefreshStormIsRefusedAndPlaceKept(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(systemtest.Limited(map[string]string{"WR_TARGET_ACTIVE": "0"}))
	stormer := in.Enter(systemtest.User(1), "default").Str("queueToken")
	calm := in.Enter(systemtest.User(2), "default").Str("queueToken")
	var last systemtest.Response
	for range 20 {
		if last = in.Position("default", stormer); last.Status == 429 {
			break
		}
	}
	if last.Status != 429 || last.Header.Get("Retry-After") != "1" {
		t.Fatalf("storm = %d %v %s, want 429 with Retry-After 1 (band 1 s: one poll per 0.5 s)", last.Status, last.Header.Get("Retry-After"), last.Raw)
	}
	if r := in.Position("default", calm); r.Status != 200 || r.Num("position") != 2 {
		t.Fatalf("another user's poll during the storm = %d %s", r.Status, r.Raw)
	}
	time.Sleep(time.Second) // the Retry-After the server gave
	if r := in.Position("default", stormer); r.Status != 200 || r.Num("position") != 1 {
		t.Fatalf("after Retry-After = %d %s, want the same place", r.Status, r.Raw)
	}
}

// TestReadyPollStormIsRefused: READY asks for no poll (pollAfterMs 0); a
// storm of polls with its token is still paced, and the entry token it holds
// stays valid.
func TestReadyPollStormIsRefused(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(systemtest.Limited(map[string]string{}))
	qt := in.Enter(systemtest.User(1), "default").Str("queueToken")
	in.Admit("default")
	var last systemtest.Response
	for range 20 {
		if last = in.Position("default", qt); last.Status == 429 {
			break
		}
		if last.Str("status") != "READY" {
			t.Fatalf("poll = %d %s, want READY", last.Status, last.Raw)
		}
	}
	if last.Status != 429 || last.Str("error") != "rate_limited" || last.Header.Get("Retry-After") == "" {
		t.Fatalf("READY storm = %d %s, want 429 with Retry-After", last.Status, last.Raw)
	}
	other := in.Enter(systemtest.User(2), "default").Str("queueToken")
	if r := in.Position("default", other); r.Status != 200 {
		t.Fatalf("another user's poll during the storm = %d %s", r.Status, r.Raw)
	}
	systemtest.WaitFor(t, "the storm's pace to recover", func() bool { return in.Position("default", qt).Str("status") == "READY" })
}

// TestForwardedForIsIgnoredUnlessTrusted: the client IP comes from the
// socket; headers count only from a configured proxy.
func TestForwardedForIsIgnoredUnlessTrusted(t *testing.T) {
	e := systemtest.NewEnv(t)
	login := func(in *systemtest.Instance, ip string) int {
		return systemtest.Do(t, "POST", in.Base+"/api/v1/auth/login", "", map[string]string{"loginId": "nobody", "password": "x"},
			"X-Real-IP", ip, "X-Forwarded-For", ip).Status
	}
	untrusted := e.Start(systemtest.Limited(map[string]string{"WR_LIMIT_LOGIN_IP": "2/1h:2", "WR_LIMIT_LOGIN_ID": "100/1s"}))
	got := []int{login(untrusted, "10.0.0.1"), login(untrusted, "10.0.0.2"), login(untrusted, "10.0.0.3")}
	if got[2] != 429 {
		t.Fatalf("spoofed headers from an untrusted peer changed the client IP: %v", got)
	}
	e2 := systemtest.NewEnv(t)
	trusted := e2.Start(systemtest.Limited(map[string]string{"WR_LIMIT_LOGIN_IP": "2/1h:2", "WR_LIMIT_LOGIN_ID": "100/1s", "WR_TRUSTED_PROXIES": "127.0.0.1"}))
	for i := range 5 {
		if code := login(trusted, "10.0.1."+strconv.Itoa(i)); code != 401 {
			t.Fatalf("client %d behind the trusted proxy = %d, want 401 (its own limit)", i, code)
		}
	}
}

// TestOrderCeilingHoldsBeforeTheToken: the room-wide order ceiling refuses
// before the entry token is spent.
func TestOrderCeilingHoldsBeforeTheToken(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(systemtest.Limited(map[string]string{"WR_LIMIT_ORDER_ROOM": "1/1h:1", "WR_TARGET_ACTIVE": "2"}))
	a := in.Enter(systemtest.User(1), "default").Str("queueToken")
	b := in.Enter(systemtest.User(2), "default").Str("queueToken")
	in.Admit("default")
	if r := in.Order(a, in.Position("default", a).Str("entryToken"), 1, 1); r.Status != 201 {
		t.Fatalf("first order = %d %s", r.Status, r.Raw)
	}
	entry := in.Position("default", b).Str("entryToken")
	if r := in.Order(b, entry, 1, 1); r.Status != 429 || r.Str("error") != "rate_limited" {
		t.Fatalf("order past the room's ceiling = %d %s", r.Status, r.Raw)
	}
	if p := in.Position("default", b); p.Str("status") != "READY" || p.Str("entryToken") != entry {
		t.Fatalf("the refused order spent the token: %s", p.Raw)
	}
}

// TestRedisDownPolicies: with Redis gone, login fails closed (503: no
// BCrypt without its limit) while a poll answered from memory fails open.
func TestRedisDownPolicies(t *testing.T) {
	port := systemtest.FreePort(t)
	_, port, _ = net.SplitHostPort(port)
	rp := systemtest.StartRedis(t, t.TempDir(), port)
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port, DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	base := systemtest.NewEnv(t)
	e := &systemtest.Env{T: t, DBURL: base.DBURL, Redis: rdb, Prefix: queuetest.Prefix()}
	in := e.Start(systemtest.Limited(map[string]string{"WR_TARGET_ACTIVE": "0"}))
	// 150 people ahead, so the poller is answered from the hub's memory
	// (entered through a client with the usual timeouts: the server's are
	// short on purpose, and a loaded machine must not fail the set-up).
	setup := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port})
	t.Cleanup(func() { setup.Close() })
	q := queue.New(setup, queue.Options{Prefix: e.Prefix})
	var ticket int64
	for i := range 151 {
		st, err := q.Enter(context.Background(), "default", "p"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		ticket = st.Ticket
	}
	tok, _ := token.New(token.Config{Secret: systemtest.TestSecret}).IssueQueue("p150", "default", ticket, time.Hour)
	in.Position("default", tok) // the hub tracks the room from its first poll
	systemtest.WaitFor(t, "the hub to answer from memory", func() bool {
		st, ok := in.Parts.Hub.Position("default", ticket)
		return ok && st.Position == 151
	})
	rp.Kill()
	if r := in.Position("default", tok); r.Status != 200 || r.Num("position") != 151 {
		t.Fatalf("poll with Redis down = %d %s, want 200 (fails open, from memory)", r.Status, r.Raw)
	}
	if r := systemtest.Do(t, "POST", in.Base+"/api/v1/auth/login", "", map[string]string{"loginId": systemtest.User(1), "password": systemtest.TestPassword}); r.Status != 503 {
		t.Fatalf("login with Redis down = %d %s, want 503 (fails closed)", r.Status, r.Raw)
	}
	if n := in.Metric("waitingroom_bcrypt_seconds"); n != 0 {
		t.Fatalf("%v BCrypt verifications with the login limit unavailable", n)
	}
}

// TestCORS: off by default; with origins configured, exactly those get
// credentialed access and nobody gets a wildcard.
func TestCORS(t *testing.T) {
	e := systemtest.NewEnv(t)
	preflight := func(in *systemtest.Instance, origin string) http.Header {
		req, _ := http.NewRequest("OPTIONS", in.Base+"/api/v1/rooms/default/enter", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		res, err := systemtest.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.Header
	}
	off := e.Start(nil)
	if h := preflight(off, "https://evil.example"); h.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("CORS answered while off: %v", h)
	}
	on := e.Start(map[string]string{"WR_CORS_ORIGINS": "https://shop.example"})
	if h := preflight(on, "https://shop.example"); h.Get("Access-Control-Allow-Origin") != "https://shop.example" || h.Get("Access-Control-Allow-Credentials") != "true" {
		t.Fatalf("configured origin: %v", h)
	}
	if h := preflight(on, "https://evil.example"); h.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("another origin allowed: %v", h)
	}
	if _, err := compose.LoadConfig(systemtest.EnvOf(map[string]string{"WR_JWT_SECRET": systemtest.TestSecret, "WR_CORS_ORIGINS": "*"})); err == nil {
		t.Fatal("WR_CORS_ORIGINS=* accepted")
	}
}

// TestAccessLists: deny refuses before any work (by address and by user),
// allow exempts from rate limits but not from the queue, bypass admits at
// once and is audited; the lists are shared through Redis by instances.
func TestAccessLists(t *testing.T) {
	systemtest.LongScenario(t)
	e := systemtest.NewEnv(t)
	vars := systemtest.Limited(map[string]string{"WR_TARGET_ACTIVE": "0", "WR_LIMIT_ENTER_USER": "1/1h:1", "WR_LIMIT_ENTER_IP": "100000/1s"})
	a, b := e.Start(vars), e.Start(vars)
	put := func(body map[string][]string) systemtest.Response {
		return systemtest.Do(t, "PUT", a.Admin+"/admin/access", systemtest.TestAdminToken, body)
	}
	if r := put(map[string][]string{"deny": {"not an ip"}}); r.Status != 400 {
		t.Fatalf("bad entry = %d %s", r.Status, r.Raw)
	}
	u1, u2, u3 := a.Login(systemtest.User(1)), a.Login(systemtest.User(2)), a.Login(systemtest.User(3))
	if r := put(map[string][]string{"deny": {"user:1"}, "allow": {"user:2"}, "bypass": {"user:3"}}); r.Status != 200 {
		t.Fatalf("PUT access = %d %s", r.Status, r.Raw)
	}
	// Instance b learns the lists through Redis within its refresh.
	systemtest.WaitFor(t, "instance b to deny user1", func() bool {
		return systemtest.Do(t, "POST", b.Base+"/api/v1/rooms/default/enter", u1, nil).Status == 403
	})
	if r := systemtest.Do(t, "POST", b.Base+"/api/v1/rooms/default/enter", u1, nil); r.Str("error") != "denied" {
		t.Fatalf("denied user = %s", r.Raw)
	}
	// user2 is exempt from the enter limit (1 per hour) but still waits.
	for range 3 {
		if r := systemtest.Do(t, "POST", b.Base+"/api/v1/rooms/default/enter", u2, nil); r.Status != 200 || r.Str("status") != "WAITING" {
			t.Fatalf("allowed user = %d %s", r.Status, r.Raw)
		}
	}
	// user3 is admitted at once although targetActive is 0, and audited.
	r := systemtest.Do(t, "POST", b.Base+"/api/v1/rooms/default/enter", u3, nil)
	if r.Str("status") != "READY" || r.Str("entryToken") == "" {
		t.Fatalf("bypass user = %s", r.Raw)
	}
	if !strings.Contains(b.Logs.String(), "audit: queue bypass") {
		t.Fatal("the bypass was not audited in the log")
	}
	// Denied addresses are refused before anything else, even login.
	put(map[string][]string{"deny": {"127.0.0.0/8"}})
	systemtest.WaitFor(t, "the address to be denied", func() bool {
		return systemtest.Do(t, "POST", b.Base+"/api/v1/auth/login", "", map[string]string{"loginId": systemtest.User(4), "password": systemtest.TestPassword}).Status == 403
	})
	put(map[string][]string{"deny": {}})
}

// TestHardening: the cookie's Secure flag on demand, the header size
// limit, the slow-client cut, and the management endpoints absent from the
// public port.
func TestHardening(t *testing.T) {
	systemtest.LongScenario(t)
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_COOKIE_SECURE": "1"})
	req, _ := http.NewRequest("POST", in.Base+"/api/v1/rooms/default/enter", nil)
	req.Header.Set("Authorization", "Bearer "+in.Login(systemtest.User(1)))
	res, err := systemtest.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if c := res.Cookies(); len(c) != 1 || !c[0].Secure || !c[0].HttpOnly {
		t.Fatalf("cookie with WR_COOKIE_SECURE=1: %+v", c)
	}
	// Headers over 16 KiB: 431, not a 500 or a hang.
	if r := systemtest.Do(t, "GET", in.Base+"/api/v1/products/1", "", nil, "X-Padding", strings.Repeat("a", 20<<10)); r.Status != 431 {
		t.Fatalf("oversized headers = %d %s", r.Status, r.Raw)
	}
	// /metrics and /admin are not on the public port.
	for _, path := range []string{"/metrics", "/admin/rooms", "/readyz", "/debug/pprof/"} {
		if r := systemtest.Do(t, "GET", in.Base+path, systemtest.TestAdminToken, nil); r.Status != 404 {
			t.Errorf("public %s = %d", path, r.Status)
		}
	}
	// A client that starts a request and stalls is cut (ReadTimeout 10 s).
	conn, err := net.Dial("tcp", strings.TrimPrefix(in.Base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET /api/v1/products/1 HTTP/1.1\r\nHost: x\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 512)
	for {
		if _, err := conn.Read(buf); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("a stalled request was not cut within 30 s")
			}
			break // closed by the server (possibly after a 408)
		}
	}
}

// TestEnterLimitsInsideTheEnterScript: with the limits on, an enter costs
// one script on Redis — the enter limits decided inside the enter script —
// not a rate-limit script and then the enter. The decision is the same:
// enters past the per-user limit and past the per-address limit are
// refused (429, the contract's JSON, Retry-After) without entering anyone,
// while other users and addresses enter; a refused enter counts on neither
// limit (all or nothing).
func TestEnterLimitsInsideTheEnterScript(t *testing.T) {
	e := systemtest.NewEnv(t)
	cnt := systemtest.CountRedis(t, e)
	in := e.Start(systemtest.Limited(systemtest.BehindProxy(map[string]string{"WR_TARGET_ACTIVE": "0",
		"WR_LIMIT_ENTER_USER": "2/1h:2", "WR_LIMIT_ENTER_IP": "3/1h:3"})))
	toks := map[int]string{}
	for _, u := range []int{1, 2, 3, 4, 9} {
		toks[u] = in.Login(systemtest.User(u))
	}
	enter := func(u int, ip string) systemtest.Response {
		return systemtest.Do(t, "POST", in.Base+"/api/v1/rooms/default/enter", toks[u], nil, "X-Real-IP", ip)
	}
	if r := enter(9, "10.9.9.9"); r.Status != 200 { // the scripts are loaded
		t.Fatalf("first enter = %d %s", r.Status, r.Raw)
	}
	before := cnt.Snapshot()
	want := []struct {
		user   int
		ip     string
		status int
	}{
		{1, "10.0.0.1", 200}, {1, "10.0.0.1", 200}, // the user's two
		{1, "10.0.0.1", 429}, // the user's third: counts on neither limit
		{2, "10.0.0.1", 200}, // so the address's third is allowed
		{3, "10.0.0.1", 429}, // its fourth is not
		{4, "10.0.0.2", 200}, // another address is unaffected
	}
	for i, w := range want {
		r := enter(w.user, w.ip)
		if r.Status != w.status {
			t.Fatalf("enter %d (user %d from %s) = %d %s, want %d", i+1, w.user, w.ip, r.Status, r.Raw, w.status)
		}
		if r.Status == 429 && (r.Str("error") != "rate_limited" || r.Header.Get("Retry-After") == "") {
			t.Fatalf("enter %d refused without the contract's JSON or Retry-After: %v %s", i+1, r.Header, r.Raw)
		}
	}
	d := cnt.Since(before)
	if d["enter"] != len(want) || d["limited enter"] != len(want) || d["gcra"] != 0 {
		t.Fatalf("%d enters ran %d enter scripts (%d with the limits inside) and %d rate-limit scripts; want %d, %d and 0",
			len(want), d["enter"], d["limited enter"], d["gcra"], len(want), len(want))
	}
	claims, err := token.New(token.Config{Secret: systemtest.TestSecret}).Parse(toks[3], token.KindAccess)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.Parts.Queue.Status(context.Background(), "default", claims.Subject); !errors.Is(err, queue.ErrNotInQueue) {
		t.Fatalf("a refused user's status: %v, want not in the queue", err)
	}
	if n := in.Metric("waitingroom_rate_limited_total"); n != 2 {
		t.Fatalf("rate_limited_total = %v, want 2", n)
	}
}
