package flow

// A paused room over HTTP: it takes arrivals (signed in, anonymous in
// gateway mode, and into a sharded pre-queue), tells them it is paused,
// admits nobody, and once resumed admits everyone in arrival order by
// itself. Refusing arrivals is method reject (hostile/methods_test.go).

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/pow"
)

// runSawWaiting waits until an admission run of room has seen n waiting
// (the gauge its runs set): a run that could have admitted them did.
func runSawWaiting(t *testing.T, in *systemtest.Instance, room string, n int) {
	t.Helper()
	systemtest.WaitFor(t, fmt.Sprintf("an admission run of %s with %d waiting", room, n), func() bool {
		return in.MetricWhere("waitingroom_queue_waiting", "room="+room) == float64(n)
	})
}

// TestPausedRoomTakesArrivals: signed-in users who arrive while the room
// is paused get a place behind those already waiting, WAITING with
// paused: true and no ETA; nobody is admitted while paused; at the
// operator's resume the room admits them in arrival order by itself.
func TestPausedRoomTakesArrivals(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	tokens := []string{in.Enter(systemtest.User(1), "default").Str("queueToken")}
	in.MustPutRoom("default", map[string]any{"paused": true, "targetActive": 1})
	for i := 2; i <= 3; i++ {
		r := in.Enter(systemtest.User(i), "default")
		checkPaused(t, fmt.Sprintf("%s entering the paused room", systemtest.User(i)), r.Body, true)
		if r.Num("position") != int64(i) || r.Str("queueToken") == "" {
			t.Fatalf("%s entering the paused room = %s, want a place at %d and a queue token", systemtest.User(i), r.Raw, i)
		}
		tokens = append(tokens, r.Str("queueToken"))
	}
	runSawWaiting(t, in, "default", 3)
	for i, tok := range tokens {
		p := in.Position("default", tok)
		checkPaused(t, fmt.Sprintf("%s's poll while paused", systemtest.User(i+1)), p.Body, true)
		if p.Num("position") != int64(i+1) {
			t.Fatalf("%s's poll while paused = %s, want position %d", systemtest.User(i+1), p.Raw, i+1)
		}
	}
	if a := in.AdminRoom("default").Num("active"); a != 0 {
		t.Fatalf("the paused room admitted %d", a)
	}

	// Resumed, with room for one at a time: READY in arrival order, each
	// once the one before has ordered.
	in.MustPutRoom("default", map[string]any{"paused": false})
	for i := range tokens {
		systemtest.WaitFor(t, "someone READY after the resume", func() bool {
			for _, tok := range tokens[i:] {
				if in.Position("default", tok).Str("status") == "READY" {
					return true
				}
			}
			return false
		})
		for j, tok := range tokens[i:] {
			if ready := in.Position("default", tok).Str("status") == "READY"; ready != (j == 0) {
				t.Fatalf("after %d orders, %s READY = %v: want the first still waiting alone READY", i, systemtest.User(i+j+1), ready)
			}
		}
		in.OrderWhenReady("default", tokens[i])
	}
}

// solvedEnter enters room anonymously for visitor c, solving the room's
// proof of work first, and returns the enter's answer.
func solvedEnter(t *testing.T, in *systemtest.Instance, c *http.Client, room string) (int, map[string]any) {
	t.Helper()
	code, _, ch := systemtest.Call(t, c, "GET", in.Base+"/_wr/api/v1/rooms/"+room+"/challenge", "")
	tok, _ := ch["challenge"].(string)
	d, _ := ch["difficulty"].(float64)
	if code != 200 || tok == "" {
		t.Fatalf("challenge: %d %v", code, ch)
	}
	body := fmt.Sprintf(`{"challenge":%q,"solution":%q}`, tok, pow.Solve(tok, int(d)))
	code, _, m := systemtest.Call(t, c, "POST", in.Base+"/_wr/api/v1/rooms/"+room+"/enter", body, "Content-Type", "application/json")
	return code, m
}

// TestPausedGatewayRoomTakesAnonymousArrivals: in gateway mode an
// anonymous visitor who solves the proof of work while the room is
// paused is queued (not 423), told it is paused, and at the resume is
// admitted by itself and let through to the origin with a pass.
func TestPausedGatewayRoomTakesAnonymousArrivals(t *testing.T) {
	o := systemtest.StartOrigin(t)
	in := systemtest.GatewayInstance(t, o, map[string]string{"WR_TARGET_ACTIVE": "0"})
	systemtest.SetGateway(t, in, "sale", map[string]any{"challenge": "pow", "difficulty": 8})
	in.MustPutRoom("sale", map[string]any{"paused": true, "targetActive": 5})
	c := systemtest.Visitor(t)
	code, m := solvedEnter(t, in, c, "sale")
	_, hasETA := m["etaSeconds"]
	if code != 200 || m["status"] != "WAITING" || m["paused"] != true || m["position"] != 1.0 || hasETA {
		t.Fatalf("anonymous enter while paused = %d %v, want WAITING at 1, paused, no ETA", code, m)
	}
	runSawWaiting(t, in, "sale", 1)
	if _, _, m := systemtest.Call(t, c, "GET", in.Base+"/_wr/api/v1/rooms/sale/position", ""); m["status"] != "WAITING" || m["paused"] != true {
		t.Fatalf("poll while paused = %v, want WAITING, paused", m)
	}
	if code, _, m := systemtest.Call(t, c, "GET", in.Base+"/checkout/cart", "", "Accept", "application/json"); code != 403 || m["error"] != "pass_required" {
		t.Fatalf("the origin while still waiting: %d %v, want 403 pass_required", code, m)
	}

	in.MustPutRoom("sale", map[string]any{"paused": false})
	systemtest.WaitFor(t, "READY after the resume", func() bool {
		_, _, m := systemtest.Call(t, c, "GET", in.Base+"/_wr/api/v1/rooms/sale/position", "")
		return m["status"] == "READY"
	})
	if code, _, m := systemtest.Call(t, c, "GET", in.Base+"/checkout/cart", ""); code != 200 || m["room"] != "sale" {
		t.Fatalf("the origin after admission: %d %v, want 200 with a pass for sale", code, m)
	}
}

// TestPausedShardedRoomTakesArrivals: a room with a sharded pre-queue
// (prequeueParts 3) takes arrivals before its opening while paused, opens
// while paused admitting nobody, and admits them once resumed.
func TestPausedShardedRoomTakesArrivals(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	opens := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	in.MustPutRoom("default", map[string]any{"prequeueParts": 3, "opensAt": opens, "paused": true, "targetActive": 5})
	var tokens []string
	for i := 1; i <= 4; i++ {
		r := in.Enter(systemtest.User(i), "default")
		if r.Str("status") != "PREQUEUE" || r.Body["paused"] != true {
			t.Fatalf("%s before the opening of the paused room = %s, want PREQUEUE, paused", systemtest.User(i), r.Raw)
		}
		tokens = append(tokens, r.Str("queueToken"))
	}
	in.MustPutRoom("default", map[string]any{"opensAt": nil})
	runSawWaiting(t, in, "default", 4)
	for i, tok := range tokens {
		p := in.Position("default", tok)
		if p.Str("status") != "WAITING" || p.Body["paused"] != true {
			t.Fatalf("%s after the opening, still paused = %s, want WAITING, paused", systemtest.User(i+1), p.Raw)
		}
		if nt := p.Str("queueToken"); nt != "" {
			tokens[i] = nt // the opening's fresh token (hostile/methods_test.go)
		}
	}
	in.MustPutRoom("default", map[string]any{"paused": false})
	for i, tok := range tokens {
		systemtest.WaitFor(t, systemtest.User(i+1)+" READY after the resume", func() bool {
			return in.Position("default", tok).Str("status") == "READY"
		})
	}
}
