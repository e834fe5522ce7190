package members_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue/members"
	"waitingroom/queue/queuetest"
)

// TestOwnerSharesRoomsAndMovesOnlyTheLeaversShare: every room has exactly
// one owner among the live ids, the rooms spread about evenly, and when an
// instance leaves only the rooms it owned change hands (the others keep
// their owner, so nothing else is re-read or re-run).
func TestOwnerSharesRoomsAndMovesOnlyTheLeaversShare(t *testing.T) {
	ids := []string{"a1", "b2", "c3", "d4"}
	rooms := make([]string, 4000)
	for i := range rooms {
		rooms[i] = fmt.Sprintf("room-%d", i)
	}
	count := map[string]int{}
	before := map[string]string{}
	for _, r := range rooms {
		o := members.Owner(ids, r)
		if !slices.Contains(ids, o) {
			t.Fatalf("owner of %s = %q, not a live id", r, o)
		}
		count[o]++
		before[r] = o
	}
	for _, id := range ids {
		// 1,000 expected each; a fair hash stays well within ±20 %.
		if n := count[id]; n < 800 || n > 1200 {
			t.Errorf("%s owns %d of 4000 rooms, want about 1000 (%v)", id, n, count)
		}
	}
	rest := []string{"a1", "c3", "d4"}
	for _, r := range rooms {
		after := members.Owner(rest, r)
		if before[r] != "b2" && after != before[r] {
			t.Fatalf("%s moved from %s to %s although %s stayed", r, before[r], after, before[r])
		}
		if before[r] == "b2" && after == "b2" {
			t.Fatalf("%s still owned by the instance that left", r)
		}
	}
	if o := members.Owner(nil, "room"); o != "" {
		t.Fatalf("owner among nobody = %q", o)
	}
}

// TestBeatOwnsAndLeave: instances that beat see each other, each room is
// owned by exactly one of them, a clean Leave hands its rooms over at the
// others' next beat, and an instance that stopped beating expires.
func TestBeatOwnsAndLeave(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	ctx := context.Background()
	key := prefix + "instances"
	// A long expiry: this test expires an instance by moving its beat into
	// the past, never by waiting.
	a := members.New(rdb, members.Options{Key: key, ID: "a", Expiry: time.Minute})
	b := members.New(rdb, members.Options{Key: key, ID: "b", Expiry: time.Minute})
	if a.Owns("r") || a.Live() != nil {
		t.Fatal("an instance owns a room before its first beat")
	}
	for _, m := range []*members.Members{a, b, a} {
		if _, err := m.Beat(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := a.Live(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("a sees %q, want a and b", got)
	}
	if changed, err := b.Beat(ctx); err != nil || changed {
		t.Fatalf("b's second beat: changed %v, %v; want no change", changed, err)
	}
	ownedBy := func() map[string]int {
		n := map[string]int{}
		for i := range 200 {
			r := fmt.Sprintf("r%d", i)
			switch {
			case a.Owns(r) && b.Owns(r):
				t.Fatalf("%s owned by both", r)
			case a.Owns(r):
				n["a"]++
			case b.Owns(r):
				n["b"]++
			default:
				t.Fatalf("%s owned by neither", r)
			}
		}
		return n
	}
	if n := ownedBy(); n["a"] == 0 || n["b"] == 0 {
		t.Fatalf("rooms not shared: %v", n)
	}

	if err := b.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if changed, err := a.Beat(ctx); err != nil || !changed {
		t.Fatalf("a's beat after b left: changed %v, %v; want a change", changed, err)
	}
	for i := range 200 {
		if r := fmt.Sprintf("r%d", i); !a.Owns(r) {
			t.Fatalf("a does not own %s after b left", r)
		}
	}

	// b comes back, then stops beating: its last beat, an hour old, has
	// expired at a's next beat.
	if _, err := b.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Beat(ctx); err != nil || !slices.Equal(a.Live(), []string{"a", "b"}) {
		t.Fatalf("a sees %q, %v; want a and b", a.Live(), err)
	}
	tm, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZAdd(ctx, key, redisZ(tm.Add(-time.Hour).UnixMilli(), "b")).Err(); err != nil {
		t.Fatal(err)
	}
	if changed, err := a.Beat(ctx); err != nil || !changed || !slices.Equal(a.Live(), []string{"a"}) {
		t.Fatalf("after b expired: a sees %q (changed %v, %v); want a alone", a.Live(), changed, err)
	}
}

// TestBeatWithRedisGoneKeepsTheView: a beat that cannot reach Redis is an
// error and leaves the last view as it was.
func TestBeatWithRedisGoneKeepsTheView(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	ctx := context.Background()
	a := members.New(rdb, members.Options{Key: prefix + "instances", ID: "a"})
	if _, err := a.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	_ = rdb.Close()
	if _, err := a.Beat(ctx); err == nil {
		t.Fatal("beat with Redis closed: no error")
	}
	if !a.Owns("any") || !slices.Equal(a.Live(), []string{"a"}) {
		t.Fatalf("view after a failed beat: %q", a.Live())
	}
}

func redisZ(score int64, member string) redis.Z {
	return redis.Z{Score: float64(score), Member: member}
}
