package hostile

import (
	"errors"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"golang.org/x/crypto/bcrypt"

	"waitingroom/cmd/waitingroom/compose"
	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/token"
)

// loginFrom attempts a login as if from address ip.
func loginFrom(t testing.TB, in *systemtest.Instance, ip, loginID, password string) systemtest.Response {
	t.Helper()
	return systemtest.Do(t, "POST", in.Base+"/api/v1/auth/login", "", map[string]string{"loginId": loginID, "password": password}, "X-Real-IP", ip)
}

// TestLoginSoftLockout: five wrong passwords from one address lock that
// address out of the account, never the owner at another address; an
// attacker rotating addresses gets one guess per address; an address that
// has failed on an account under attack is slowed.
func TestLoginSoftLockout(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(systemtest.Limited(systemtest.BehindProxy(map[string]string{})))
	victim := systemtest.User(7)
	for i := range 5 {
		if r := loginFrom(t, in, "10.0.0.1", victim, "wrong"); r.Status != 401 {
			t.Fatalf("wrong password %d from A = %d %s", i+1, r.Status, r.Raw)
		}
	}
	if r := loginFrom(t, in, "10.0.0.1", victim, systemtest.TestPassword); r.Status != 429 || r.Str("error") != "rate_limited" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("A after five failures = %d %s, want 429 with Retry-After", r.Status, r.Raw)
	}
	if r := loginFrom(t, in, "10.0.0.2", victim, systemtest.TestPassword); r.Status != 200 {
		t.Fatalf("the owner from B after A's failures = %d %s, want 200", r.Status, r.Raw)
	}
	// A's other accounts are not locked by its failures on this one.
	if r := loginFrom(t, in, "10.0.0.1", systemtest.User(8), systemtest.TestPassword); r.Status != 200 {
		t.Fatalf("another account from A = %d %s", r.Status, r.Raw)
	}
	// Ten addresses guessing once each (the account's own limit exhausted
	// long ago) each get their guess; the owner still gets in.
	for i := range 10 {
		if r := loginFrom(t, in, "10.0.1."+strconv.Itoa(i), victim, "wrong"); r.Status != 401 {
			t.Fatalf("rotating attacker %d = %d %s, want 401 (a fresh address goes on to BCrypt)", i, r.Status, r.Raw)
		}
	}
	if r := loginFrom(t, in, "10.0.0.2", victim, systemtest.TestPassword); r.Status != 200 {
		t.Fatalf("the owner during a rotating attack = %d %s", r.Status, r.Raw)
	}
	// An address that has just failed on the attacked account is slowed.
	if r := loginFrom(t, in, "10.0.1.0", victim, "wrong"); r.Status != 429 {
		t.Fatalf("a second guess from a failing address on an attacked account = %d %s, want 429", r.Status, r.Raw)
	}
	logs := in.Logs.String()
	for _, want := range []string{"event=login_failed", "login_id=user7", "limit=login_pair", "subject=account_address", "limit=login_id"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %q", want)
		}
	}
	if n := in.Metric("waitingroom_security_events_total"); n < 16 {
		t.Errorf("security events = %v, want at least 16 (15 failed logins, 2 refusals)", n)
	}
}

// TestCredentialStuffingLeavesOthersAlone: one address trying many
// accounts is refused after its failure budget (plus at most what it had in
// flight), while another address logs in normally.
func TestCredentialStuffingLeavesOthersAlone(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(systemtest.Limited(systemtest.BehindProxy(map[string]string{"WR_LIMIT_LOGIN_IP": "20/1h:20"})))
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	sem := make(chan struct{}, 16)
	for i := range 300 {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r := loginFrom(t, in, "10.9.9.9", "victim"+strconv.Itoa(i), "guess")
			mu.Lock()
			codes[r.Status]++
			mu.Unlock()
		})
		if i == 150 {
			if r := loginFrom(t, in, "10.0.0.2", systemtest.User(3), systemtest.TestPassword); r.Status != 200 {
				t.Errorf("another address during the stuffing = %d %s", r.Status, r.Raw)
			}
		}
	}
	wg.Wait()
	if codes[401] < 20 || codes[401] > 20+15 || codes[401]+codes[429] != 300 {
		t.Fatalf("codes %v, want 20 to 35 ×401 (budget + in flight), the rest 429", codes)
	}
	if n := in.Metric("waitingroom_bcrypt_seconds"); int(n) != codes[401]+1 {
		t.Fatalf("%v BCrypt verifications, want %d (one per 401, and the other address's login)", n, codes[401]+1)
	}
}

// TestNATSuccessesAreNotLimitedByFailures: sixty users behind one address
// log in at once under failure limits far smaller than sixty; the failure
// limit still bites when failures come.
func TestNATSuccessesAreNotLimitedByFailures(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(systemtest.Limited(systemtest.BehindProxy(map[string]string{
		"WR_LIMIT_LOGIN_IP": "3/1h:3", "WR_LIMIT_LOGIN_PAIR": "1/1h:1", "WR_LIMIT_LOGIN_ID": "1/1h:1",
		"WR_LIMIT_LOGIN_ATTEMPTS_IP": "1000/1m:1000",
	})))
	var wg sync.WaitGroup
	for i := range systemtest.TestUsers {
		wg.Go(func() {
			for range 2 { // and each logs in twice
				if r := loginFrom(t, in, "10.5.5.5", systemtest.User(i+1), systemtest.TestPassword); r.Status != 200 {
					t.Errorf("user %d behind the NAT = %d %s", i+1, r.Status, r.Raw)
				}
			}
		})
	}
	wg.Wait()
	for i := range 3 {
		if r := loginFrom(t, in, "10.5.5.5", "nobody"+strconv.Itoa(i), "x"); r.Status != 401 {
			t.Fatalf("failure %d = %d", i+1, r.Status)
		}
	}
	if r := loginFrom(t, in, "10.5.5.5", systemtest.User(1), systemtest.TestPassword); r.Status != 429 {
		t.Fatalf("after the address's failure budget = %d %s, want 429", r.Status, r.Raw)
	}
}

// TestLoginAttemptsPerAddress: every attempt counts on
// login_attempts_ip, correct or not: one client looping on a valid
// account is stopped before BCrypt; others are not.
func TestLoginAttemptsPerAddress(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(systemtest.Limited(systemtest.BehindProxy(map[string]string{"WR_LIMIT_LOGIN_ATTEMPTS_IP": "5/1h:5"})))
	for range 5 {
		if r := loginFrom(t, in, "10.0.0.1", systemtest.User(1), systemtest.TestPassword); r.Status != 200 {
			t.Fatalf("login = %d", r.Status)
		}
	}
	if r := loginFrom(t, in, "10.0.0.1", systemtest.User(1), systemtest.TestPassword); r.Status != 429 {
		t.Fatalf("sixth attempt = %d, want 429", r.Status)
	}
	if r := loginFrom(t, in, "10.0.0.2", systemtest.User(1), systemtest.TestPassword); r.Status != 200 {
		t.Fatalf("another address = %d", r.Status)
	}
	if n := in.Metric("waitingroom_bcrypt_seconds"); n != 6 {
		t.Fatalf("%v BCrypt verifications, want 6", n)
	}
}

// rawRequest sends a request with exactly the given headers (no client
// defaults added beyond Go's own) and returns the response.
func rawRequest(t testing.TB, method, url string, body string, headers ...string) systemtest.Response {
	t.Helper()
	return systemtest.Do(t, method, url, "", stringOrNil(body), headers...)
}

func stringOrNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// TestCrossSiteRequestsAreRefused: a cookie-authenticated state change
// from a foreign origin, and any WebSocket handshake from one, get 403
// cross_site and change nothing; same-origin, allow-listed and bearer
// requests pass.
func TestCrossSiteRequestsAreRefused(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_TARGET_ACTIVE": "0", "WR_CORS_ORIGINS": "https://shop.example"})
	qt := in.Enter(systemtest.User(1), "default").Str("queueToken")
	cookie := "wr_queue=" + qt
	leave := in.Base + "/api/v1/rooms/default/leave"
	form := []string{"Content-Type", "application/x-www-form-urlencoded", "Cookie", cookie}
	for name, h := range map[string][]string{
		"cross-site fetch metadata": {"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"},
		"same-site fetch metadata":  {"Origin", "https://sub.shop.example", "Sec-Fetch-Site", "same-site"},
		"foreign Origin only":       {"Origin", "https://evil.example"},
		"null Origin":               {"Origin", "null"},
	} {
		r := rawRequest(t, "POST", leave, "a=1", append(append([]string{}, form...), h...)...)
		if r.Status != 403 || r.Str("error") != "cross_site" {
			t.Errorf("%s: leave = %d %s, want 403 cross_site", name, r.Status, r.Raw)
		}
	}
	r := systemtest.Do(t, "POST", in.Base+"/api/v1/orders", "", `{"productId":1,"quantity":1}`,
		"Cookie", cookie, "X-Entry-Token", "x", "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")
	if r.Status != 403 || r.Str("error") != "cross_site" {
		t.Errorf("cross-site order = %d %s", r.Status, r.Raw)
	}
	if p := in.Position("default", qt); p.Status != 200 || p.Num("position") != 1 {
		t.Fatalf("the place after refused cross-site requests = %d %s", p.Status, p.Raw)
	}

	// WebSocket: a foreign Origin is refused before the upgrade, with the
	// cookie or the token in the query; the page's own origin is not.
	wsURL := strings.Replace(in.Base, "http://", "ws://", 1) + "/api/v1/rooms/default/ws"
	for name, h := range map[string]http.Header{
		"cookie": {"Origin": {"https://evil.example"}, "Cookie": {cookie}},
		"query":  {"Origin": {"https://evil.example"}},
	} {
		u := wsURL
		if name == "query" {
			u += "?token=" + qt
		}
		c, res, err := websocket.DefaultDialer.Dial(u, h)
		if err == nil {
			c.Close()
			t.Errorf("WebSocket with a foreign Origin (%s) upgraded", name)
			continue
		}
		if res == nil || res.StatusCode != 403 {
			t.Errorf("WebSocket with a foreign Origin (%s): %v %v, want 403", name, err, res)
		}
	}
	host := strings.TrimPrefix(in.Base, "http://")
	c, _, err := websocket.DefaultDialer.Dial(wsURL, http.Header{"Origin": {"http://" + host}, "Cookie": {cookie}})
	if err != nil {
		t.Fatalf("same-origin WebSocket: %v", err)
	}
	if m := systemtest.ReadWS(t, c); m.Status != "WAITING" {
		t.Fatalf("same-origin WebSocket first frame: %+v", m)
	}
	c.Close()

	// Allowed: an origin on WR_CORS_ORIGINS, a bearer call from anywhere
	// (no cookie), a request with no browser headers at all, the page.
	if r := rawRequest(t, "GET", in.Base+"/api/v1/rooms/default/position", "", "Cookie", cookie, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"); r.Status != 200 {
		t.Errorf("a cross-site GET (changes nothing) = %d", r.Status)
	}
	if r := rawRequest(t, "POST", leave, "", "Cookie", cookie, "Origin", "https://shop.example", "Sec-Fetch-Site", "cross-site"); r.Status != 204 {
		t.Errorf("leave from an allowed origin = %d %s", r.Status, r.Raw)
	}
	qt2 := in.Enter(systemtest.User(2), "default").Str("queueToken")
	if r := systemtest.Do(t, "POST", leave, qt2, nil, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"); r.Status != 204 {
		t.Errorf("bearer leave with a foreign Origin and no cookie = %d %s", r.Status, r.Raw)
	}
	qt3 := in.Enter(systemtest.User(3), "default").Str("queueToken")
	if r := rawRequest(t, "POST", leave, "", "Cookie", "wr_queue="+qt3); r.Status != 204 {
		t.Errorf("cookie leave without Origin or Sec-Fetch-Site = %d %s", r.Status, r.Raw)
	}
	qt4 := in.Enter(systemtest.User(4), "default").Str("queueToken")
	if r := rawRequest(t, "POST", leave, "", "Cookie", "wr_queue="+qt4, "Origin", "http://"+host, "Sec-Fetch-Site", "same-origin"); r.Status != 204 {
		t.Errorf("same-origin cookie leave = %d %s", r.Status, r.Raw)
	}
	logs := in.Logs.String()
	if !strings.Contains(logs, "event=cross_site") || !strings.Contains(logs, "origin=https://evil.example") {
		t.Error("cross-site refusals were not logged as security events")
	}
}

// setCookies returns the response's Set-Cookie headers.
func setCookies(r systemtest.Response) []string { return r.Header.Values("Set-Cookie") }

// TestQueueCookieOverHTTPS: behind a trusted proxy saying HTTPS the cookie
// is __Host-wr_queue, Secure, Path=/; the same header from an untrusted
// peer changes nothing; both names are read; leave clears the cookie at
// the path it was set with.
func TestQueueCookieOverHTTPS(t *testing.T) {
	e := systemtest.NewEnv(t)
	plain := e.Start(map[string]string{})
	access := plain.Login(systemtest.User(1))
	r := systemtest.Do(t, "POST", plain.Base+"/api/v1/rooms/default/enter", access, nil, "X-Forwarded-Proto", "https")
	sc := strings.Join(setCookies(r), "\n")
	if !strings.HasPrefix(sc, "wr_queue=") || strings.Contains(sc, "__Host-") || strings.Contains(strings.ToLower(sc), "secure") || !strings.Contains(sc, "path=/api/v1") {
		t.Fatalf("X-Forwarded-Proto from an untrusted peer: Set-Cookie %q, want the plain cookie", sc)
	}
	qt := r.Str("queueToken")
	r = rawRequest(t, "POST", plain.Base+"/api/v1/rooms/default/leave", "", "Cookie", "wr_queue="+qt)
	sc = strings.Join(setCookies(r), "\n")
	if r.Status != 204 || !regexp.MustCompile(`(?m)^wr_queue=; expires=Thu, 01 Jan 1970 00:00:00 GMT; path=/api/v1`).MatchString(sc) {
		t.Fatalf("leave over HTTP = %d, Set-Cookie %q: want wr_queue expired at path /api/v1", r.Status, sc)
	}

	tls := e.Start(systemtest.BehindProxy(map[string]string{}))
	r = systemtest.Do(t, "POST", tls.Base+"/api/v1/rooms/default/enter", access, nil, "X-Forwarded-Proto", "https")
	sc = strings.Join(setCookies(r), "\n")
	if !strings.HasPrefix(sc, "__Host-wr_queue=") || !strings.Contains(sc, "; secure") || !strings.Contains(sc, "path=/;") || strings.Contains(strings.ToLower(sc), "domain=") {
		t.Fatalf("over HTTPS: Set-Cookie %q, want __Host-wr_queue, Secure, Path=/", sc)
	}
	qt = r.Str("queueToken")
	if r := rawRequest(t, "GET", tls.Base+"/api/v1/rooms/default/position", "", "Cookie", "__Host-wr_queue="+qt+"; wr_queue=stale"); r.Status != 200 {
		t.Fatalf("poll with the __Host- cookie (and a stale plain one) = %d %s", r.Status, r.Raw)
	}
	r = rawRequest(t, "POST", tls.Base+"/api/v1/rooms/default/leave", "", "Cookie", "__Host-wr_queue="+qt, "X-Forwarded-Proto", "https")
	sc = strings.Join(setCookies(r), "\n")
	if r.Status != 204 || !regexp.MustCompile(`(?m)^__Host-wr_queue=; expires=Thu, 01 Jan 1970 00:00:00 GMT; path=/; HttpOnly; secure`).MatchString(sc) ||
		!regexp.MustCompile(`(?m)^wr_queue=; expires=[^;]+; path=/api/v1`).MatchString(sc) {
		t.Fatalf("leave over HTTPS = %d, Set-Cookie %q: want both names expired at their paths", r.Status, sc)
	}
	if r := tls.Position("default", qt); r.Status != 404 {
		t.Fatalf("after leave = %d, want 404 not_in_queue", r.Status)
	}
}

// TestBadInputIsNotAnOutage: a login id the database cannot store is a 400
// with a reason, never a 503 with Retry-After.
func TestBadInputIsNotAnOutage(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(systemtest.Limited(map[string]string{}))
	for _, id := range []string{"user\u0000one", "user\u0085", "a\u001bb", "\u007f"} {
		r := systemtest.Do(t, "POST", in.Base+"/api/v1/auth/login", "", map[string]string{"loginId": id, "password": "x"})
		if r.Status != 400 || r.Str("error") != "invalid_request" || r.Header.Get("Retry-After") != "" || !strings.Contains(r.Str("message"), "loginId") {
			t.Errorf("loginId %q = %d %v %s, want 400 invalid_request without Retry-After", id, r.Status, r.Header.Get("Retry-After"), r.Raw)
		}
	}
	if n := in.Metric("waitingroom_bcrypt_seconds"); n != 0 {
		t.Errorf("%v BCrypt verifications for malformed login ids", n)
	}
	if r := in.Login(systemtest.User(1)); r == "" {
		t.Fatal("a good login after bad ones failed")
	}
}

// TestUnknownProductKeepsTheToken: a typo in the product id is 404
// product_not_found and the same entry token then orders the right one.
func TestUnknownProductKeepsTheToken(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_TARGET_ACTIVE": "1"})
	qt := in.Enter(systemtest.User(1), "default").Str("queueToken")
	in.Admit("default")
	entry := in.Position("default", qt).Str("entryToken")
	if entry == "" {
		t.Fatal("not admitted")
	}
	for range 2 { // the second answer comes from the cache
		if r := in.Order(qt, entry, 999, 1); r.Status != 404 || r.Str("error") != "product_not_found" {
			t.Fatalf("order of an unknown product = %d %s", r.Status, r.Raw)
		}
	}
	if r := in.Order(qt, entry, 2, 1); r.Status != 201 || r.Num("productId") != 2 {
		t.Fatalf("the same token, the right product = %d %s, want 201", r.Status, r.Raw)
	}
}

// TestSecurityEventsAreLoggedWithinABudget: refused tokens are logged with
// their reason; a flood is counted in full but logged at most 20 lines a
// second, then summarised.
func TestSecurityEventsAreLoggedWithinABudget(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{})
	access := in.Login(systemtest.User(1))
	qt := in.Enter(systemtest.User(1), "default").Str("queueToken")
	expired, _ := token.New(token.Config{Secret: systemtest.TestSecret}).IssueQueue("1", "default", 1, -time.Minute)
	foreign, _ := token.New(token.Config{Secret: "another-secret-another-secret-another-secret"}).IssueQueue("1", "default", 1, time.Hour)
	tampered := qt[:len(qt)-4] + "AAAA"
	if tampered == qt {
		tampered = qt[:len(qt)-4] + "BBBB"
	}
	for reason, tok := range map[string]string{
		"expired": expired, "unknown_kid": foreign, "bad_signature": tampered, "wrong_kind": access, "malformed": "not.a.jwt",
	} {
		if r := in.Position("default", tok); r.Status != 401 {
			t.Fatalf("%s token = %d", reason, r.Status)
		}
		if !strings.Contains(in.Logs.String(), "event=token_refused address=127.0.0.1 reason="+reason) {
			t.Errorf("no token_refused event with reason %s", reason)
		}
	}
	before := in.Metric("waitingroom_security_events_total")
	const flood = 200
	began := time.Now()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range flood / 8 {
				in.Position("default", "not.a.jwt")
			}
		})
	}
	wg.Wait()
	windows := int(time.Since(began)/time.Second) + 2 // the one-second windows the flood touched
	if got := in.Metric("waitingroom_security_events_total") - before; got != flood {
		t.Fatalf("security events counted = %v, want all %d", got, flood)
	}
	if n := strings.Count(in.Logs.String(), "event=token_refused"); n > 5+20*windows {
		t.Fatalf("%d token_refused lines for %d events over at most %d windows, want at most 20 a second", n, 5+flood, windows)
	}
	// Once the window that held lines back ends, the event's next line
	// comes after a summary of them.
	summary := regexp.MustCompile(`msg="security events suppressed" event=token_refused suppressed=[1-9]`)
	systemtest.WaitFor(t, "the suppressed lines to be summarised", func() bool {
		in.Position("default", "not.a.jwt")
		return summary.MatchString(in.Logs.String())
	})
	if strings.Contains(in.Logs.String(), expired) || strings.Contains(in.Logs.String(), "not.a.jwt") {
		t.Fatal("a refused token was logged")
	}
}

// TestAdminAuthenticationIsThrottled: ten wrong admin tokens from one
// address, then 429 (even with the right token) for that address only.
func TestAdminAuthenticationIsThrottled(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(systemtest.BehindProxy(map[string]string{}))
	rooms := in.Admin + "/admin/rooms"
	for i := range 10 {
		if r := systemtest.Do(t, "GET", rooms, "guess"+strconv.Itoa(i), nil, "X-Real-IP", "10.0.0.1"); r.Status != 401 {
			t.Fatalf("wrong admin token %d = %d", i+1, r.Status)
		}
	}
	r := systemtest.Do(t, "GET", rooms, systemtest.TestAdminToken, nil, "X-Real-IP", "10.0.0.1")
	if r.Status != 429 || r.Str("error") != "rate_limited" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("the throttled address = %d %v %s, want 429 with Retry-After", r.Status, r.Header, r.Raw)
	}
	if r := systemtest.Do(t, "GET", rooms, systemtest.TestAdminToken, nil, "X-Real-IP", "10.0.0.2"); r.Status != 200 {
		t.Fatalf("another address = %d %s", r.Status, r.Raw)
	}
	logs := in.Logs.String()
	if strings.Count(logs, "event=admin_auth_failed address=10.0.0.1") != 10 || !strings.Contains(logs, "event=admin_auth_throttled") {
		t.Fatal("failed admin authentications were not logged")
	}
	if strings.Contains(logs, "guess") {
		t.Fatal("a guessed admin token was logged")
	}
}

// TestLoginLimitsConfig: the login limits' defaults, and a bad value named.
func TestLoginLimitsConfig(t *testing.T) {
	c, err := compose.LoadConfig(systemtest.EnvOf(map[string]string{"WR_JWT_SECRET": systemtest.TestSecret}))
	if err != nil {
		t.Fatal(err)
	}
	l := c.Login
	if l.IP.String() != "10/1m0s:10" || l.ID.String() != "10/1m0s:5" || l.Pair.String() != "5/5m0s:5" || l.AttemptsIP.String() != "120/1m0s:60" {
		t.Fatalf("login limits = ip %v, id %v, pair %v, attempts %v", l.IP, l.ID, l.Pair, l.AttemptsIP)
	}
	for _, v := range []string{"WR_LIMIT_LOGIN_PAIR", "WR_LIMIT_LOGIN_ATTEMPTS_IP"} {
		_, err := compose.LoadConfig(systemtest.EnvOf(map[string]string{"WR_JWT_SECRET": systemtest.TestSecret, v: "five"}))
		var ce *compose.ConfigError
		if !errors.As(err, &ce) || ce.Var != v {
			t.Errorf("%s=five: %v, want a ConfigError naming it", v, err)
		}
	}
}

// bcryptCostTaking returns the BCrypt cost (8 to 14) whose hash takes about
// d in this process now: each step of the cost doubles the work.
func bcryptCostTaking(t *testing.T, d time.Duration) int {
	t.Helper()
	start := time.Now()
	if _, err := bcrypt.GenerateFromPassword([]byte("x"), 8); err != nil {
		t.Fatal(err)
	}
	at8 := max(time.Since(start), time.Microsecond)
	cost := 8 + int(math.Round(math.Log2(float64(d)/float64(at8))))
	t.Logf("BCrypt cost 8 took %v here: cost %d for about %v", at8, min(max(cost, 8), 14), d)
	return min(max(cost, 8), 14)
}

// TestBcryptSlotsBoundLogins: logins from many addresses at once (each
// within its own limits) never take more BCrypt slots than
// WR_BCRYPT_CONCURRENCY; those that find none free within the wait get 503
// with Retry-After — never 500 — while a waiting user's polls are answered.
func TestBcryptSlotsBoundLogins(t *testing.T) {
	systemtest.BusyScenario(t)
	e := systemtest.NewEnv(t)
	// Unknown ids are verified against a dummy hash of WR_BCRYPT_COST, at
	// a cost whose verification takes about half a second here and now:
	// the 16 logins then need several times the 2 s wait on one slot, so
	// some find it busy, and each is still answered far within the
	// client's 30 s. A fixed cost 12 took more than 30 s for one
	// verification under -race beside a second suite (load 11), and under
	// a tenth of a second without -race it would find no slot busy.
	cost := bcryptCostTaking(t, 500*time.Millisecond)
	in := e.Start(systemtest.Limited(systemtest.BehindProxy(map[string]string{"WR_BCRYPT_COST": strconv.Itoa(cost), "WR_BCRYPT_CONCURRENCY": "1"})))
	qt := in.Enter(systemtest.User(1), "default").Str("queueToken")
	const logins = 16
	statuses := make(chan systemtest.Response, logins)
	var wg sync.WaitGroup
	for i := range logins {
		wg.Go(func() {
			statuses <- loginFrom(t, in, "10.9.0."+strconv.Itoa(i+1), "nobody"+strconv.Itoa(i), "guess")
		})
	}
	polls := 0
	for len(statuses) < logins && polls < 50 {
		if r := in.Position("default", qt); r.Status != 200 && r.Status != 429 {
			t.Fatalf("a waiting user's poll during the login flood = %d %s", r.Status, r.Raw)
		}
		polls++
	}
	wg.Wait()
	close(statuses)
	busy := 0
	for r := range statuses {
		switch {
		case r.Status == 401:
		case r.Status == 503 && r.Str("error") == "unavailable" && r.Header.Get("Retry-After") != "":
			busy++
		default:
			t.Fatalf("login in the flood = %d %s, want 401 or 503 with Retry-After", r.Status, r.Raw)
		}
	}
	if busy == 0 {
		t.Fatalf("no login found the BCrypt slot busy: %d logins on one slot at cost %d", logins, cost)
	}
	if got := in.Metric("waitingroom_bcrypt_busy_total"); got != float64(busy) {
		t.Fatalf("waitingroom_bcrypt_busy_total = %v, want %d", got, busy)
	}
}
