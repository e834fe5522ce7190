package flow

import (
	"encoding/json"
	"testing"
	"time"

	"waitingroom/cmd/waitingroom/systemtest"
)

// TestProvisionalETA: a fresh room whose operator set expectedOrderSeconds
// answers an estimate marked provisional at the first enter, in polls and
// pushes alike; a fresh room without it withholds the estimate, as
// before. Bad values are refused in the contract's form.
func TestProvisionalETA(t *testing.T) {
	systemtest.QuickBeside(t)
	e := systemtest.NewEnv(t)
	in := e.Start(nil)
	for _, bad := range []string{`{"expectedOrderSeconds":-1}`, `{"expectedOrderSeconds":0.05}`,
		`{"expectedOrderSeconds":86401}`, `{"expectedOrderSeconds":"4s"}`} {
		if r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/fresh", systemtest.TestAdminToken, bad); r.Status != 400 || r.Str("error") != "invalid_request" {
			t.Errorf("PUT %s = %d %s, want 400 invalid_request", bad, r.Status, r.Raw)
		}
	}
	r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/fresh", systemtest.TestAdminToken, `{"targetActive":5,"expectedOrderSeconds":4}`)
	if r.Status != 200 || r.Body["expectedOrderSeconds"] != 4.0 {
		t.Fatalf("PUT fresh = %d %s", r.Status, r.Raw)
	}
	if g := in.AdminRoom("fresh"); g.Body["expectedOrderSeconds"] != 4.0 {
		t.Fatalf("GET fresh = %s", g.Raw)
	}
	var log struct {
		Entries []struct {
			Path  string `json:"path"`
			After struct {
				ExpectedOrderSeconds float64 `json:"expectedOrderSeconds"`
			} `json:"after"`
		} `json:"entries"`
	}
	if a := systemtest.Do(t, "GET", in.Admin+"/admin/audit?limit=1", systemtest.TestAdminToken, nil); json.Unmarshal([]byte(a.Raw), &log) != nil ||
		len(log.Entries) != 1 || log.Entries[0].Path != "/admin/rooms/fresh" || log.Entries[0].After.ExpectedOrderSeconds != 4 {
		t.Fatalf("audit = %d %s, want the change with expectedOrderSeconds 4 after", a.Status, a.Raw)
	}
	if r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/plain", systemtest.TestAdminToken, `{"targetActive":5}`); r.Status != 200 || r.Body["expectedOrderSeconds"] != 0.0 {
		t.Fatalf("PUT plain = %d %s", r.Status, r.Raw)
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
	systemtest.WaitWithin(t, 10*time.Second, "both rooms read", func() bool {
		var d struct {
			Rooms []roomStats `json:"rooms"`
		}
		s := systemtest.Do(t, "GET", in.Admin+"/admin/stats?busy=false", systemtest.TestAdminToken, nil)
		if err := json.Unmarshal([]byte(s.Raw), &d); err != nil {
			t.Fatalf("stats %d %s: %v", s.Status, s.Raw, err)
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
	a := in.Enter(systemtest.User(1), "fresh")
	if a.Str("status") != "WAITING" || a.Body["etaKnown"] != true || a.Body["etaProvisional"] != true || a.Body["etaSeconds"] != float64(0) {
		t.Fatalf("first enter of a room that expects 4 s orders = %s", a.Raw)
	}
	if p := in.Position("fresh", a.Str("queueToken")); p.Body["etaProvisional"] != true || p.Body["etaSeconds"] == nil {
		t.Fatalf("poll = %s", p.Raw)
	}
	// Pushes carry it too (the status sent on connect); after an
	// admission, before any order is measured, it is still provisional.
	second := in.Enter(systemtest.User(3), "fresh")
	s := systemtest.OpenSSE(t, in, "fresh", second.Str("queueToken"))
	provisional := func(pos float64) func(string, map[string]any) bool {
		return func(typ string, d map[string]any) bool {
			return typ == "status" && d["position"] == pos && d["etaProvisional"] == true && d["etaSeconds"] != nil
		}
	}
	sseUntil(t, s, "a provisional status at position 2", provisional(2))
	if n := in.Admit("fresh"); n != 2 {
		t.Fatalf("admitted %d, want both", n)
	}
	third := in.Enter(systemtest.User(4), "fresh")
	if third.Num("position") != 1 || third.Body["etaProvisional"] != true {
		t.Fatalf("enter after an admission, nothing measured yet = %s", third.Raw)
	}

	b := in.Enter(systemtest.User(5), "plain")
	if _, ok := b.Body["etaSeconds"]; ok || b.Body["etaKnown"] != false || b.Body["etaProvisional"] != nil {
		t.Fatalf("first enter of a room that expects nothing = %s", b.Raw)
	}
}
