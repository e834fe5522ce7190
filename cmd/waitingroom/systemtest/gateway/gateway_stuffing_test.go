package gateway

import (
	"fmt"
	"net/http"
	"testing"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/pow"
)

// Queue stuffing by anonymous visitors (gateway mode): the per-address and
// per-network limits on new places, re-entries that never count on them,
// and the proof of work's difficulty rising with one network's burst.

// stuffing is a gateway instance behind a trusted proxy (X-Real-IP names
// the client) with the rate limits on and vars on top.
func stuffing(t *testing.T, vars map[string]string) *systemtest.Instance {
	t.Helper()
	v := systemtest.BehindProxy(systemtest.Limited(map[string]string{}))
	for k, val := range vars {
		v[k] = val
	}
	return systemtest.GatewayInstance(t, systemtest.StartOrigin(t), v)
}

// enterFrom is an anonymous enter of room "sale" by c from ip, with body
// (a solved challenge, or "").
func enterFrom(t *testing.T, in *systemtest.Instance, c *http.Client, ip, body string) (int, map[string]any) {
	t.Helper()
	code, _, m := systemtest.Call(t, c, "POST", in.Base+"/_wr/api/v1/rooms/sale/enter", body,
		"Content-Type", "application/json", "X-Real-IP", ip)
	return code, m
}

// challengeFrom gets c a challenge of room "sale" from ip: its token and
// difficulty.
func challengeFrom(t *testing.T, in *systemtest.Instance, c *http.Client, ip string) (string, int) {
	t.Helper()
	code, _, m := systemtest.Call(t, c, "GET", in.Base+"/_wr/api/v1/rooms/sale/challenge", "", "X-Real-IP", ip)
	tok, _ := m["challenge"].(string)
	d, _ := m["difficulty"].(float64)
	if code != 200 || m["required"] != true || tok == "" {
		t.Fatalf("challenge from %s: %d %v", ip, code, m)
	}
	return tok, int(d)
}

// solvedFrom is a solved challenge for c from ip, as enter's body, and its
// difficulty.
func solvedFrom(t *testing.T, in *systemtest.Instance, c *http.Client, ip string) (string, int) {
	t.Helper()
	tok, d := challengeFrom(t, in, c, ip)
	return fmt.Sprintf(`{"challenge":%q,"solution":%q}`, tok, pow.Solve(tok, d)), d
}

// RefusedBy is waitingroom_rate_limited_total{limit=name}.
func refusedBy(t *testing.T, in *systemtest.Instance, name string) float64 {
	t.Helper()
	mfs, err := in.Parts.Metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "waitingroom_rate_limited_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "limit" && l.GetValue() == name {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestStuffingLimitsPerAddressAndNetwork: fresh visitors (no cookie) from
// one address get the address's new places and then 429; more addresses
// of its /24 get what is left of the network's; a visitor from another
// network enters at once, as does one of another /48 beside a flooded
// IPv6 one.
func TestStuffingLimitsPerAddressAndNetwork(t *testing.T) {
	in := stuffing(t, map[string]string{"WR_LIMIT_ENTER_NEW_IP": "3/1h:3", "WR_LIMIT_ENTER_NEW_NET": "5/1h:5"})
	try := func(ip string, want ...int) {
		t.Helper()
		for i, w := range want {
			code, m := enterFrom(t, in, http.DefaultClient, ip, "")
			if code != w {
				t.Fatalf("fresh visitor %d from %s: %d %v, want %d", i+1, ip, code, m, w)
			}
			if code == 429 && m["error"] != "rate_limited" {
				t.Fatalf("refusal from %s not in the contract's form: %v", ip, m)
			}
		}
	}
	try("203.0.113.1", 200, 200, 200, 429, 429) // the address's 3
	if n := refusedBy(t, in, "enter_new_ip"); n != 2 {
		t.Fatalf("enter_new_ip refusals = %v, want 2", n)
	}
	try("203.0.113.2", 200, 200, 429) // the network's other 2
	try("203.0.113.77", 429)
	if n := refusedBy(t, in, "enter_new_net"); n != 2 {
		t.Fatalf("enter_new_net refusals = %v, want 2", n)
	}
	try("198.51.100.7", 200, 200, 200) // another network: at once
	try("2001:db8:1:1::1", 200, 200, 200, 429)
	try("2001:db8:1:2::9", 200, 200, 429) // the same /48
	try("2001:db8:2::1", 200)             // another /48
	try("2001:db8:1:1:ffff::1", 429)      // the same /64: the same address
	if code, _, m := systemtest.Call(t, http.DefaultClient, "POST", in.Base+"/_wr/api/v1/rooms/default/enter", "",
		"X-Real-IP", "203.0.113.1"); code != 200 {
		t.Fatalf("the flooded address in another room: %d %v, want 200 (counted per room)", code, m)
	}
}

// TestStuffingReentryIsNotCounted: a visitor with a place entering again
// (a reload, a second tab) never counts on the new-place limits, nor needs
// a new proof of work; the address's places stay for new visitors.
func TestStuffingReentryIsNotCounted(t *testing.T) {
	in := stuffing(t, map[string]string{"WR_LIMIT_ENTER_NEW_IP": "2/1h:2", "WR_LIMIT_ENTER_USER": "100/1m:100",
		"WR_GATEWAY_CHALLENGE": "pow", "WR_POW_DIFFICULTY": "4"})
	ip := "203.0.113.5"
	a := systemtest.Visitor(t)
	body, _ := solvedFrom(t, in, a, ip)
	if code, m := enterFrom(t, in, a, ip, body); code != 200 {
		t.Fatalf("first enter: %d %v", code, m)
	}
	for i := range 10 {
		if code, m := enterFrom(t, in, a, ip, ""); code != 200 || (m["status"] != "WAITING" && m["status"] != "READY") {
			t.Fatalf("re-entry %d without a proof: %d %v, want 200 with the place (WAITING or READY)", i+1, code, m)
		}
	}
	b := systemtest.Visitor(t)
	body, _ = solvedFrom(t, in, b, ip)
	if code, m := enterFrom(t, in, b, ip, body); code != 200 {
		t.Fatalf("a second visitor after 10 re-entries: %d %v, want 200 (re-entries counted nothing)", code, m)
	}
	c := systemtest.Visitor(t)
	body, _ = solvedFrom(t, in, c, ip)
	if code, m := enterFrom(t, in, c, ip, body); code != 429 {
		t.Fatalf("a third visitor: %d %v, want 429 (the address's 2 places taken)", code, m)
	}
	// Its proof was given back with the refusal: the same one enters
	// from another address.
	if code, m := enterFrom(t, in, c, "198.51.100.5", body); code != 200 {
		t.Fatalf("the refused visitor's proof again, from elsewhere: %d %v, want 200", code, m)
	}
	// A new visitor without a proof still needs one.
	if code, m := enterFrom(t, in, systemtest.Visitor(t), "198.51.100.6", ""); code != 403 || m["error"] != "challenge_required" {
		t.Fatalf("a new visitor without a proof: %d %v, want 403 challenge_required", code, m)
	}
}

// TestStuffingDifficultyRisesForOneNetwork: a burst of new places from one
// /24 raises the difficulty its challenges ask for, a bit per doubling
// from 8; another network's stays the room's. A cheap solution fetched
// before the burst is refused once the network's count is past what it
// was issued for; a fresh, harder one enters.
func TestStuffingDifficultyRisesForOneNetwork(t *testing.T) {
	in := stuffing(t, map[string]string{
		// A day's interval: the count of places does not decay during the test.
		"WR_LIMIT_ENTER_NEW_NET": "1/24h:1000", "WR_LIMIT_ENTER_NEW_IP": "1/24h:1000",
		"WR_GATEWAY_CHALLENGE": "pow", "WR_POW_DIFFICULTY": "4"})
	early := systemtest.Visitor(t)
	stale, d := solvedFrom(t, in, early, "203.0.113.200")
	if d != 4 {
		t.Fatalf("difficulty before the burst = %d, want the room's 4", d)
	}
	want := map[int]int{0: 4, 8: 5, 16: 6, 32: 7} // places taken -> difficulty asked
	for n := 0; n <= 32; n++ {
		c := systemtest.Visitor(t)
		ip := fmt.Sprintf("203.0.113.%d", n+1)
		body, got := solvedFrom(t, in, c, ip)
		if w, ok := want[n]; ok && got != w {
			t.Fatalf("after %d places from the /24: difficulty %d, want %d", n, got, w)
		}
		if _, other := challengeFrom(t, in, systemtest.Visitor(t), "198.51.100.1"); other != 4 {
			t.Fatalf("another network's difficulty after %d places from the /24: %d, want 4", n, other)
		}
		if n == 16 {
			if code, m := enterFrom(t, in, early, "203.0.113.200", stale); code != 403 || m["error"] != "challenge_invalid" {
				t.Fatalf("a difficulty-4 solution after 16 places: %d %v, want 403 challenge_invalid", code, m)
			}
			fresh, fd := solvedFrom(t, in, early, "203.0.113.200")
			if code, m := enterFrom(t, in, early, "203.0.113.200", fresh); code != 200 || fd != 6 {
				t.Fatalf("a fresh difficulty-%d solution: %d %v, want 200 at difficulty 6", fd, code, m)
			}
			continue // that place counted too
		}
		if code, m := enterFrom(t, in, c, ip, body); code != 200 {
			t.Fatalf("place %d from the /24: %d %v", n+1, code, m)
		}
	}
}
