package main

// A paused room over HTTP: it takes arrivals (signed in, anonymous in
// gateway mode, and into a sharded pre-queue), tells them it is paused,
// admits nobody, and once resumed admits everyone in arrival order by
// itself. Refusing arrivals is method reject (methods_test.go).

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"waitingroom/server/pow"
)

// runSawWaiting waits until an admission run of room has seen n waiting
// (the gauge its runs set): a run that could have admitted them did.
func runSawWaiting(t *testing.T, in *instance, room string, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("an admission run of %s with %d waiting", room, n), func() bool {
		return in.metricWhere("waitingroom_queue_waiting", "room="+room) == float64(n)
	})
}

// TestPausedRoomTakesArrivals: signed-in users who arrive while the room
// is paused get a place behind those already waiting, WAITING with
// paused: true and no ETA; nobody is admitted while paused; at the
// operator's resume the room admits them in arrival order by itself.
func TestPausedRoomTakesArrivals(t *testing.T) {
	e := newEnv(t)
	in := e.start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	tokens := []string{in.enter(user(1), "default").str("queueToken")}
	in.mustPutRoom("default", map[string]any{"paused": true, "targetActive": 1})
	for i := 2; i <= 3; i++ {
		r := in.enter(user(i), "default")
		checkPaused(t, fmt.Sprintf("%s entering the paused room", user(i)), r.body, true)
		if r.num("position") != int64(i) || r.str("queueToken") == "" {
			t.Fatalf("%s entering the paused room = %s, want a place at %d and a queue token", user(i), r.raw, i)
		}
		tokens = append(tokens, r.str("queueToken"))
	}
	runSawWaiting(t, in, "default", 3)
	for i, tok := range tokens {
		p := in.position("default", tok)
		checkPaused(t, fmt.Sprintf("%s's poll while paused", user(i+1)), p.body, true)
		if p.num("position") != int64(i+1) {
			t.Fatalf("%s's poll while paused = %s, want position %d", user(i+1), p.raw, i+1)
		}
	}
	if a := in.adminRoom("default").num("active"); a != 0 {
		t.Fatalf("the paused room admitted %d", a)
	}

	// Resumed, with room for one at a time: READY in arrival order, each
	// once the one before has ordered.
	in.mustPutRoom("default", map[string]any{"paused": false})
	for i := range tokens {
		waitFor(t, "someone READY after the resume", func() bool {
			for _, tok := range tokens[i:] {
				if in.position("default", tok).str("status") == "READY" {
					return true
				}
			}
			return false
		})
		for j, tok := range tokens[i:] {
			if ready := in.position("default", tok).str("status") == "READY"; ready != (j == 0) {
				t.Fatalf("after %d orders, %s READY = %v: want the first still waiting alone READY", i, user(i+j+1), ready)
			}
		}
		in.orderWhenReady("default", tokens[i])
	}
}

// solvedEnter enters room anonymously for visitor c, solving the room's
// proof of work first, and returns the enter's answer.
func solvedEnter(t *testing.T, in *instance, c *http.Client, room string) (int, map[string]any) {
	t.Helper()
	code, _, ch := call(t, c, "GET", in.base+"/_wr/api/v1/rooms/"+room+"/challenge", "")
	tok, _ := ch["challenge"].(string)
	d, _ := ch["difficulty"].(float64)
	if code != 200 || tok == "" {
		t.Fatalf("challenge: %d %v", code, ch)
	}
	body := fmt.Sprintf(`{"challenge":%q,"solution":%q}`, tok, pow.Solve(tok, int(d)))
	code, _, m := call(t, c, "POST", in.base+"/_wr/api/v1/rooms/"+room+"/enter", body, "Content-Type", "application/json")
	return code, m
}

// TestPausedGatewayRoomTakesAnonymousArrivals: in gateway mode an
// anonymous visitor who solves the proof of work while the room is
// paused is queued (not 423), told it is paused, and at the resume is
// admitted by itself and let through to the origin with a pass.
func TestPausedGatewayRoomTakesAnonymousArrivals(t *testing.T) {
	o := startOrigin(t)
	in := gatewayInstance(t, o, map[string]string{"WR_TARGET_ACTIVE": "0"})
	setGateway(t, in, "sale", map[string]any{"challenge": "pow", "difficulty": 8})
	in.mustPutRoom("sale", map[string]any{"paused": true, "targetActive": 5})
	c := visitor(t)
	code, m := solvedEnter(t, in, c, "sale")
	_, hasETA := m["etaSeconds"]
	if code != 200 || m["status"] != "WAITING" || m["paused"] != true || m["position"] != 1.0 || hasETA {
		t.Fatalf("anonymous enter while paused = %d %v, want WAITING at 1, paused, no ETA", code, m)
	}
	runSawWaiting(t, in, "sale", 1)
	if _, _, m := call(t, c, "GET", in.base+"/_wr/api/v1/rooms/sale/position", ""); m["status"] != "WAITING" || m["paused"] != true {
		t.Fatalf("poll while paused = %v, want WAITING, paused", m)
	}
	if code, _, m := call(t, c, "GET", in.base+"/checkout/cart", "", "Accept", "application/json"); code != 403 || m["error"] != "pass_required" {
		t.Fatalf("the origin while still waiting: %d %v, want 403 pass_required", code, m)
	}

	in.mustPutRoom("sale", map[string]any{"paused": false})
	waitFor(t, "READY after the resume", func() bool {
		_, _, m := call(t, c, "GET", in.base+"/_wr/api/v1/rooms/sale/position", "")
		return m["status"] == "READY"
	})
	if code, _, m := call(t, c, "GET", in.base+"/checkout/cart", ""); code != 200 || m["room"] != "sale" {
		t.Fatalf("the origin after admission: %d %v, want 200 with a pass for sale", code, m)
	}
}

// TestPausedShardedRoomTakesArrivals: a room with a sharded pre-queue
// (prequeueParts 3) takes arrivals before its opening while paused, opens
// while paused admitting nobody, and admits them once resumed.
func TestPausedShardedRoomTakesArrivals(t *testing.T) {
	e := newEnv(t)
	in := e.start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	opens := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	in.mustPutRoom("default", map[string]any{"prequeueParts": 3, "opensAt": opens, "paused": true, "targetActive": 5})
	var tokens []string
	for i := 1; i <= 4; i++ {
		r := in.enter(user(i), "default")
		if r.str("status") != "PREQUEUE" || r.body["paused"] != true {
			t.Fatalf("%s before the opening of the paused room = %s, want PREQUEUE, paused", user(i), r.raw)
		}
		tokens = append(tokens, r.str("queueToken"))
	}
	in.mustPutRoom("default", map[string]any{"opensAt": nil})
	runSawWaiting(t, in, "default", 4)
	for i, tok := range tokens {
		p := in.position("default", tok)
		if p.str("status") != "WAITING" || p.body["paused"] != true {
			t.Fatalf("%s after the opening, still paused = %s, want WAITING, paused", user(i+1), p.raw)
		}
		if nt := p.str("queueToken"); nt != "" {
			tokens[i] = nt // the opening's fresh token (methods_test.go)
		}
	}
	in.mustPutRoom("default", map[string]any{"paused": false})
	for i, tok := range tokens {
		waitFor(t, user(i+1)+" READY after the resume", func() bool {
			return in.position("default", tok).str("status") == "READY"
		})
	}
}
