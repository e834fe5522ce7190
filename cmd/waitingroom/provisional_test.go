package main

import (
	"encoding/json"
	"testing"
	"time"
)

// TestProvisionalETA: a fresh room whose operator set expectedOrderSeconds
// answers an estimate marked provisional at the first enter, in polls and
// pushes alike; a fresh room without it withholds the estimate, as
// before. Bad values are refused in the contract's form.
func TestProvisionalETA(t *testing.T) {
	quickBeside(t)
	e := newEnv(t)
	in := e.start(nil)
	for _, bad := range []string{`{"expectedOrderSeconds":-1}`, `{"expectedOrderSeconds":0.05}`,
		`{"expectedOrderSeconds":86401}`, `{"expectedOrderSeconds":"4s"}`} {
		if r := do(t, "PUT", in.admin+"/admin/rooms/fresh", testAdminToken, bad); r.status != 400 || r.str("error") != "invalid_request" {
			t.Errorf("PUT %s = %d %s, want 400 invalid_request", bad, r.status, r.raw)
		}
	}
	r := do(t, "PUT", in.admin+"/admin/rooms/fresh", testAdminToken, `{"targetActive":5,"expectedOrderSeconds":4}`)
	if r.status != 200 || r.body["expectedOrderSeconds"] != 4.0 {
		t.Fatalf("PUT fresh = %d %s", r.status, r.raw)
	}
	if g := in.adminRoom("fresh"); g.body["expectedOrderSeconds"] != 4.0 {
		t.Fatalf("GET fresh = %s", g.raw)
	}
	var log struct {
		Entries []struct {
			Path  string `json:"path"`
			After struct {
				ExpectedOrderSeconds float64 `json:"expectedOrderSeconds"`
			} `json:"after"`
		} `json:"entries"`
	}
	if a := do(t, "GET", in.admin+"/admin/audit?limit=1", testAdminToken, nil); json.Unmarshal([]byte(a.raw), &log) != nil ||
		len(log.Entries) != 1 || log.Entries[0].Path != "/admin/rooms/fresh" || log.Entries[0].After.ExpectedOrderSeconds != 4 {
		t.Fatalf("audit = %d %s, want the change with expectedOrderSeconds 4 after", a.status, a.raw)
	}
	if r := do(t, "PUT", in.admin+"/admin/rooms/plain", testAdminToken, `{"targetActive":5}`); r.status != 200 || r.body["expectedOrderSeconds"] != 0.0 {
		t.Fatalf("PUT plain = %d %s", r.status, r.raw)
	}
	// Both rooms read by this instance's hub (asking for their stats
	// makes it track them; it reads a room about once a second): fresh stands
	// on the expectation, plain has nothing to stand on.
	type roomStats struct {
		Room        string `json:"room"`
		EtaWithheld string `json:"etaWithheld"`
		Estimate    *struct {
			HoldSeconds float64 `json:"holdSeconds"`
			Provisional bool    `json:"provisional"`
		} `json:"estimate"`
	}
	waitWithin(t, 10*time.Second, "both rooms read", func() bool {
		var d struct {
			Rooms []roomStats `json:"rooms"`
		}
		s := do(t, "GET", in.admin+"/admin/stats?busy=false", testAdminToken, nil)
		if err := json.Unmarshal([]byte(s.raw), &d); err != nil {
			t.Fatalf("stats %d %s: %v", s.status, s.raw, err)
		}
		got := map[string]roomStats{}
		for _, r := range d.Rooms {
			got[r.Room] = r
		}
		f, p := got["fresh"], got["plain"]
		return f.Estimate != nil && f.Estimate.Provisional && f.Estimate.HoldSeconds == 4 && p.EtaWithheld == "measuring"
	})

	// Its slots are free: the next admission run admits the user, whose
	// estimate is 0 s (there, and provisional).
	a := in.enter(user(1), "fresh")
	if a.str("status") != "WAITING" || a.body["etaKnown"] != true || a.body["etaProvisional"] != true || a.body["etaSeconds"] != float64(0) {
		t.Fatalf("first enter of a room that expects 4 s orders = %s", a.raw)
	}
	if p := in.position("fresh", a.str("queueToken")); p.body["etaProvisional"] != true || p.body["etaSeconds"] == nil {
		t.Fatalf("poll = %s", p.raw)
	}
	// Pushes carry it too (the status sent on connect); after an
	// admission, before any order is measured, it is still provisional.
	second := in.enter(user(3), "fresh")
	s := openSSE(t, in, "fresh", second.str("queueToken"))
	provisional := func(pos float64) func(string, map[string]any) bool {
		return func(typ string, d map[string]any) bool {
			return typ == "status" && d["position"] == pos && d["etaProvisional"] == true && d["etaSeconds"] != nil
		}
	}
	sseUntil(t, s, "a provisional status at position 2", provisional(2))
	if n := in.admit("fresh"); n != 2 {
		t.Fatalf("admitted %d, want both", n)
	}
	third := in.enter(user(4), "fresh")
	if third.num("position") != 1 || third.body["etaProvisional"] != true {
		t.Fatalf("enter after an admission, nothing measured yet = %s", third.raw)
	}

	b := in.enter(user(5), "plain")
	if _, ok := b.body["etaSeconds"]; ok || b.body["etaKnown"] != false || b.body["etaProvisional"] != nil {
		t.Fatalf("first enter of a room that expects nothing = %s", b.raw)
	}
}
