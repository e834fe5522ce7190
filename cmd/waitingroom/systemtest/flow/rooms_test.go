package flow

import (
	"context"
	"fmt"
	"testing"
	"time"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/queue"
)

// TestRoomsSharedAndTakenOverWhenAnInstanceDies: two instances share 24
// rooms (each admits in its own share); one is killed with SIGKILL while
// admission runs every 20 ms; the survivor takes its rooms over within a
// few ticks, and no room ever holds more than its targetActive.
func TestRoomsSharedAndTakenOverWhenAnInstanceDies(t *testing.T) {
	e := systemtest.NewEnv(t)
	a := e.Start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "2"})
	b, exited := e.StartChild("1024", "WR_TARGET_ACTIVE=2", "WR_ADMIT_INTERVAL=20ms")
	// 24 rooms: the chance that the random instance ids hand every one
	// to the same instance is 2 in 2^24.
	const rooms, users = 24, 5
	names := make([]string, rooms)
	for i := range names {
		names[i] = fmt.Sprintf("shared%d", i)
		if r := a.PutRoom(names[i], map[string]any{"targetActive": 0}); r.Status != 200 {
			t.Fatalf("PUT %s: %d %s", names[i], r.Status, r.Raw)
		}
	}
	for _, room := range names {
		for u := range users {
			a.Enter(systemtest.User(u+1), room)
		}
	}
	// Each room admits two: by whichever instance owns it.
	for _, room := range names {
		a.SetTarget(room, 2)
	}
	q := a.Parts.Queue
	ctx := context.Background()
	check := func(want int64) bool {
		t.Helper()
		done := true
		for _, room := range names {
			info, err := q.Room(ctx, room)
			if err != nil {
				t.Fatal(err)
			}
			if info.Active > info.Target {
				t.Fatalf("%s: %d active, above its target %d", room, info.Active, info.Target)
			}
			done = done && info.Active == want
		}
		return done
	}
	systemtest.WaitWithin(t, 10*time.Second, "two admitted in every room", func() bool { return check(2) })
	if n := len(a.Parts.Admitter.Running()); n == 0 || n == rooms {
		t.Fatalf("instance a runs %d of %d rooms: the rooms are not shared", n, rooms)
	}
	// b dies between two of its ticks or in one; then every room gets a
	// third slot: b's share too, from a.
	b.Kill()
	<-exited
	for _, room := range names {
		a.SetTarget(room, 3)
	}
	systemtest.WaitWithin(t, 10*time.Second, "a third admitted in every room, b's included", func() bool { return check(3) })
	if n := len(a.Parts.Admitter.Running()); n != rooms {
		t.Fatalf("instance a runs %d of %d rooms after b died", n, rooms)
	}
	check(3)
}

// TestRoomsOfTheAdminAPISurviveRedisLosingItsData: a room created and
// changed through the admin API is recorded in Postgres; when Redis loses
// everything, the admission loop creates it again with the same settings
// at its next tick, and users can enter it; a room deleted is not.
func TestRoomsOfTheAdminAPISurviveRedisLosingItsData(t *testing.T) {
	systemtest.Parallel(t)
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_ADMIT_INTERVAL": "20ms"})
	if r := in.PutRoom("launch", map[string]any{"targetActive": 7, "displayName": "The launch", "message": "Doors at ten"}); r.Status != 200 {
		t.Fatalf("PUT launch: %d %s", r.Status, r.Raw)
	}
	if r := in.PutRoom("dropped", map[string]any{"targetActive": 1}); r.Status != 200 {
		t.Fatalf("PUT dropped: %d %s", r.Status, r.Raw)
	}
	if r := systemtest.Do(t, "DELETE", in.Admin+"/admin/rooms/dropped", systemtest.TestAdminToken, nil); r.Status != 204 {
		t.Fatalf("DELETE dropped: %d %s", r.Status, r.Raw)
	}
	ctx := context.Background()
	keys, err := e.Redis.Keys(ctx, e.Prefix+"*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("keys: %v, %v", keys, err)
	}
	if err := e.Redis.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
	q := in.Parts.Queue
	systemtest.WaitWithin(t, 10*time.Second, "launch created again", func() bool {
		info, err := q.Room(ctx, "launch")
		return err == nil && info.Target == 7 && info.DisplayName == "The launch" && info.Message == "Doors at ten"
	})
	if r := in.Enter(systemtest.User(1), "launch"); r.Status != 200 {
		t.Fatalf("enter launch after the data loss: %d %s", r.Status, r.Raw)
	}
	if _, err := q.Room(ctx, "dropped"); err != queue.ErrRoomNotFound {
		t.Fatalf("the deleted room: %v, want it gone", err)
	}
}
