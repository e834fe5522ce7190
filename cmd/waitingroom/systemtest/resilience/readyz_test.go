package resilience

import (
	"context"
	"strings"
	"testing"
	"time"

	"waitingroom/cmd/waitingroom/systemtest"
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
	systemtest.LongScenario(t)
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_ROOMS": "default,sale"})
	ready := systemtest.Do(t, "GET", in.Admin+"/readyz", "", nil)
	if ready.Status != 200 || systemtest.ReadyzCheck(ready, "rooms") != "ok" {
		t.Fatalf("readyz with every room there = %d %s", ready.Status, ready.Raw)
	}

	ctx := context.Background()
	if err := e.Redis.Del(ctx, in.Parts.Queue.RoomKey("sale", queue.ConfigKey)).Err(); err != nil {
		t.Fatal(err)
	}
	if r := systemtest.Do(t, "POST", in.Base+"/api/v1/rooms/sale/enter", in.Login(systemtest.User(1)), nil); r.Status != 404 {
		t.Fatalf("enter to the lost room = %d %s, want 404", r.Status, r.Raw)
	}
	r := systemtest.Do(t, "GET", in.Admin+"/readyz", "", nil)
	if r.Status != 503 || r.Str("status") != "unavailable" || systemtest.ReadyzCheck(r, "rooms") != "missing: sale" ||
		systemtest.ReadyzCheck(r, "redis") != "ok" || systemtest.ReadyzCheck(r, "postgres") != "ok" {
		t.Fatalf("readyz with room sale lost = %d %s, want 503 naming rooms: missing: sale", r.Status, r.Raw)
	}
	systemtest.LoadSpec(t, in.Admin+"/admin/openapi.json").Call("GET", in.Admin+"/readyz", "", nil, 503) // as described
	// The readiness loop runs every 5 s: a longer wait than WaitFor's.
	systemtest.WaitWithin(t, 30*time.Second, "the readiness loop to count the lost room", func() bool {
		text := systemtest.Scrape(t, in)
		return strings.Contains(text, "\nwaitingroom_rooms_missing 1\n") &&
			strings.Contains(text, `waitingroom_dependency_up{dependency="redis"} 1`)
	})

	if err := systemtest.EnsureRooms(ctx, in.Main); err != nil {
		t.Fatal(err)
	}
	systemtest.WaitFor(t, "readyz 200 once the room exists again", func() bool {
		r := systemtest.Do(t, "GET", in.Admin+"/readyz", "", nil)
		return r.Status == 200 && systemtest.ReadyzCheck(r, "rooms") == "ok"
	})
	in.Enter(systemtest.User(1), "sale")
	systemtest.WaitWithin(t, 30*time.Second, "the readiness loop to see the room back", func() bool {
		return strings.Contains(systemtest.Scrape(t, in), "\nwaitingroom_rooms_missing 0\n")
	})
}
