package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"waitingroom/queue"
)

// TestReadyzNeedsConfiguredRooms: Redis and Postgres answer, but a
// configured room is gone from Redis (as after a restart without
// persistence): enters to it answer 404, so /readyz answers 503 naming the
// rooms check and the room, and the readiness loop's gauge counts it,
// while waitingroom_dependency_up stays 1. Once the room exists again
// (what the admission loop does) /readyz is 200 and the gauge 0. The
// admission interval is the harness's minute, so the loop does not
// recreate the room while the test looks.
func TestReadyzNeedsConfiguredRooms(t *testing.T) {
	longScenario(t)
	e := newEnv(t)
	in := e.start(map[string]string{"WR_ROOMS": "default,sale"})
	ready := do(t, "GET", in.admin+"/readyz", "", nil)
	if ready.status != 200 || readyzCheck(ready, "rooms") != "ok" {
		t.Fatalf("readyz with every room there = %d %s", ready.status, ready.raw)
	}

	ctx := context.Background()
	if err := e.rdb.Del(ctx, in.parts.Queue.RoomKey("sale", queue.ConfigKey)).Err(); err != nil {
		t.Fatal(err)
	}
	if r := do(t, "POST", in.base+"/api/v1/rooms/sale/enter", in.login(user(1)), nil); r.status != 404 {
		t.Fatalf("enter to the lost room = %d %s, want 404", r.status, r.raw)
	}
	r := do(t, "GET", in.admin+"/readyz", "", nil)
	if r.status != 503 || r.str("status") != "unavailable" || readyzCheck(r, "rooms") != "missing: sale" ||
		readyzCheck(r, "redis") != "ok" || readyzCheck(r, "postgres") != "ok" {
		t.Fatalf("readyz with room sale lost = %d %s, want 503 naming rooms: missing: sale", r.status, r.raw)
	}
	loadSpec(t, in.admin+"/admin/openapi.json").call("GET", in.admin+"/readyz", "", nil, 503) // as described
	// The readiness loop runs every 5 s: a longer wait than waitFor's.
	waitWithin(t, 30*time.Second, "the readiness loop to count the lost room", func() bool {
		text := scrape(t, in)
		return strings.Contains(text, "\nwaitingroom_rooms_missing 1\n") &&
			strings.Contains(text, `waitingroom_dependency_up{dependency="redis"} 1`)
	})

	if err := ensureRooms(ctx, in.main); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "readyz 200 once the room exists again", func() bool {
		r := do(t, "GET", in.admin+"/readyz", "", nil)
		return r.status == 200 && readyzCheck(r, "rooms") == "ok"
	})
	in.enter(user(1), "sale")
	waitWithin(t, 30*time.Second, "the readiness loop to see the room back", func() bool {
		return strings.Contains(scrape(t, in), "\nwaitingroom_rooms_missing 0\n")
	})
}

// readyzCheck is one check's answer in a /readyz body ("" when absent).
func readyzCheck(r response, name string) string {
	checks, _ := r.body["checks"].(map[string]any)
	s, _ := checks[name].(string)
	return s
}
