package main

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"waitingroom/queue"
	"waitingroom/server/pgstore/pgtest"
)

// refuseDatabase returns the switch of e's database's connections (e from
// newEnvOwnDatabase): off, it also ends the sessions connected. The test's
// end allows them again.
func refuseDatabase(t *testing.T, e *env) func(allow bool) {
	t.Helper()
	pc, err := pgx.ParseConfig(e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pgtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(ctx) })
	set := func(allow bool) {
		t.Helper()
		if _, err := admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s ALLOW_CONNECTIONS %t", pgx.Identifier{pc.Database}.Sanitize(), allow)); err != nil {
			t.Fatal(err)
		}
		if !allow {
			if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", pc.Database); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(func() { set(true) })
	return set
}

// roomsPage is GET /admin/rooms' answer, names only.
type roomsPage struct {
	Rooms []struct {
		Room string `json:"room"`
	} `json:"rooms"`
	Next *string `json:"next"`
}

// allRooms follows GET /admin/rooms?query's pages to the end and returns
// the names in order, failing on a page over limit.
func allRooms(t testing.TB, in *instance, query string, limit int) []string {
	t.Helper()
	var names []string
	after := ""
	for pages := 0; ; pages++ {
		r := do(t, "GET", fmt.Sprintf("%s/admin/rooms?limit=%d&after=%s&%s", in.admin, limit, after, query), testAdminToken, nil)
		var p roomsPage
		if r.status != 200 || json.Unmarshal([]byte(r.raw), &p) != nil || len(p.Rooms) > limit || pages > 100 {
			t.Fatalf("GET /admin/rooms?%s after %q: %d %s", query, after, r.status, r.raw)
		}
		for _, d := range p.Rooms {
			names = append(names, d.Room)
		}
		if p.Next == nil {
			return names
		}
		after = *p.Next
	}
}

// TestAdminRoomsPaged: GET /admin/rooms pages in name order, after
// exclusive, with next leading on and null on the last page; prefix and
// busy filter; bad parameters are 400 in the contract's form. Stats are
// paged the same way, busy rooms by default.
func TestAdminRoomsPaged(t *testing.T) {
	e := newEnv(t)
	in := e.start(nil)
	want := []string{"default"}
	for i := range 23 {
		for _, p := range []string{"shoe", "show"} {
			name := fmt.Sprintf("%s-%02d", p, i)
			want = append(want, name)
			if r := do(t, "PUT", in.admin+"/admin/rooms/"+name, testAdminToken, `{}`); r.status != 200 {
				t.Fatalf("create %s: %d %s", name, r.status, r.raw)
			}
		}
	}
	slices.Sort(want)
	for i, room := range []string{"shoe-04", "show-11", "show-12"} {
		in.enter(user(i+1), room)
	}
	if got := allRooms(t, in, "", 7); !slices.Equal(got, want) {
		t.Fatalf("all rooms:\n%v\nwant\n%v", got, want)
	}
	if got := allRooms(t, in, "prefix=show-1", 4); !slices.Equal(got, want[34:44]) {
		t.Fatalf("prefix show-1: %v; want %v", got, want[34:44])
	}
	if got := allRooms(t, in, "busy=1", 2); !slices.Equal(got, []string{"shoe-04", "show-11", "show-12"}) {
		t.Fatalf("busy: %v", got)
	}
	if got := allRooms(t, in, "busy=0&prefix=shoe-0", 3); len(got) != 9 || slices.Contains(got, "shoe-04") {
		t.Fatalf("idle shoe-0*: %v", got)
	}
	// The default page, whole documents.
	r := do(t, "GET", in.admin+"/admin/rooms", testAdminToken, nil)
	var p struct {
		Rooms []map[string]any `json:"rooms"`
		Next  *string          `json:"next"`
	}
	if json.Unmarshal([]byte(r.raw), &p) != nil || len(p.Rooms) != len(want) || p.Next != nil || p.Rooms[0]["targetActive"] != 5.0 {
		t.Fatalf("default page: %s", r.raw)
	}
	for _, q := range []string{"limit=0", "limit=1001", "limit=x", "after=Bad%7B", "prefix=-x", "busy=maybe", "prefix=" + strings.Repeat("a", 65)} {
		r := do(t, "GET", in.admin+"/admin/rooms?"+q, testAdminToken, nil)
		if r.status != 400 || r.str("error") != "invalid_request" || r.str("message") == "" {
			t.Errorf("?%s: %d %s; want 400 invalid_request", q, r.status, r.raw)
		}
	}

	// Stats: the busy rooms by default, a page at a time; ?room= one room.
	stats := func(query string) (rooms []string, next *string) {
		r := do(t, "GET", in.admin+"/admin/stats?"+query, testAdminToken, nil)
		var d struct {
			Rooms []struct {
				Room string `json:"room"`
			} `json:"rooms"`
			Next *string `json:"next"`
		}
		if r.status != 200 || json.Unmarshal([]byte(r.raw), &d) != nil {
			t.Fatalf("stats?%s: %d %s", query, r.status, r.raw)
		}
		for _, x := range d.Rooms {
			rooms = append(rooms, x.Room)
		}
		return rooms, d.Next
	}
	if got, next := stats(""); !slices.Equal(got, []string{"shoe-04", "show-11", "show-12"}) || next != nil {
		t.Fatalf("stats: %v next %v", got, next)
	}
	if got, next := stats("limit=2"); !slices.Equal(got, []string{"shoe-04", "show-11"}) || next == nil || *next != "show-11" {
		t.Fatalf("stats limit 2: %v next %v", got, next)
	}
	if got, _ := stats("room=shoe-00"); !slices.Equal(got, []string{"shoe-00"}) {
		t.Fatalf("stats of an idle room: %v", got)
	}
	if r := do(t, "GET", in.admin+"/admin/stats?limit=101", testAdminToken, nil); r.status != 400 {
		t.Fatalf("stats limit 101: %d %s", r.status, r.raw)
	}
}

// TestAdminRoomDefinitionSurvivesRedisLoss: a room created and changed
// through the admin API is recorded in Postgres, and reads back from there
// equal to what Redis held, after Redis lost every key; an adaptive
// room's recorded target is the operator's, not the controller's.
func TestAdminRoomDefinitionSurvivesRedisLoss(t *testing.T) {
	e := newEnv(t)
	in := e.start(nil)
	ctx := context.Background()
	put := func(room, body string) {
		t.Helper()
		if r := do(t, "PUT", in.admin+"/admin/rooms/"+room, testAdminToken, body); r.status != 200 {
			t.Fatalf("PUT %s %s: %d %s", room, body, r.status, r.raw)
		}
	}
	put("sale", `{"targetActive":12,"entryTtl":"90s","method":"random","opensAt":"2031-05-01T12:00:00Z","displayName":"Spring sale","expectedOrderSeconds":4.5,"prequeueParts":3}`)
	put("sale", `{"paused":true,"message":"back at noon"}`)
	put("flex", `{"mode":"adaptive","targetActive":8,"minActive":2,"maxActive":40}`)
	// The controller moves flex's target in Redis; the operator then
	// changes only its message.
	if err := e.rdb.HSet(ctx, in.parts.Queue.RoomKey("flex", queue.ConfigKey), "target", 31).Err(); err != nil {
		t.Fatal(err)
	}
	put("flex", `{"message":"hello"}`)
	live := map[string]queue.RoomConfig{}
	for _, room := range []string{"sale", "flex"} {
		r, err := in.parts.Queue.Room(ctx, room)
		if err != nil {
			t.Fatal(err)
		}
		live[room] = r.RoomConfig
	}
	flex := live["flex"]
	flex.Target = 8 // the operator's
	live["flex"] = flex

	// Redis loses its data: every key of the test's prefix (the shared
	// test Redis cannot be flushed).
	keys, err := e.rdb.Keys(ctx, e.prefix+"*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatal(keys, err)
	}
	if err := e.rdb.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := in.parts.Queue.Room(ctx, "sale"); err == nil {
		t.Fatal("sale survived in Redis")
	}
	defs, err := in.parts.definitions.RoomDefinitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(defs, live) {
		t.Fatalf("definitions %+v\nwant %+v", defs, live)
	}
	// What the admission loop does with them: the room is back as it was.
	if err := in.parts.Queue.EnsureRoom(ctx, "sale", defs["sale"]); err != nil {
		t.Fatal(err)
	}
	if r, err := in.parts.Queue.Room(ctx, "sale"); err != nil || !reflect.DeepEqual(r.RoomConfig, live["sale"]) {
		t.Fatalf("recreated %+v, %v\nwant %+v", r.RoomConfig, err, live["sale"])
	}
}

// TestAdminPutPostgresDown: with Postgres refusing connections a PUT
// still takes effect (a pause in an incident must), answers 503
// definition_not_recorded in the contract's form, and is audited; the
// same PUT once Postgres is back records it.
func TestAdminPutPostgresDown(t *testing.T) {
	e := newEnvOwnDatabase(t)
	in := e.start(nil)
	setAllow := refuseDatabase(t, e)
	setAllow(false)
	r := do(t, "PUT", in.admin+"/admin/rooms/default", testAdminToken, `{"paused":true}`)
	if r.status != 503 || r.str("error") != "definition_not_recorded" || r.str("message") == "" {
		t.Fatalf("PUT with Postgres down: %d %s", r.status, r.raw)
	}
	if in.adminRoom("default").body["paused"] != true {
		t.Fatal("the pause did not take effect")
	}
	if a := auditOf(t, in, ""); len(a) == 0 || a[0].Path != "/admin/rooms/default" {
		t.Fatalf("audit: %+v", a)
	}
	// A delete refuses before touching anything.
	if r := do(t, "PUT", in.admin+"/admin/rooms/other", testAdminToken, `{}`); r.status != 503 {
		t.Fatalf("create with Postgres down: %d %s", r.status, r.raw)
	}
	if r := do(t, "DELETE", in.admin+"/admin/rooms/other", testAdminToken, nil); r.status != 503 || r.str("error") != "unavailable" {
		t.Fatalf("DELETE with Postgres down: %d %s", r.status, r.raw)
	}
	if r := in.adminRoom("other"); r.status != 200 {
		t.Fatalf("the refused delete removed the room: %d %s", r.status, r.raw)
	}
	setAllow(true)
	waitFor(t, "the PUT recorded once Postgres is back", func() bool {
		return do(t, "PUT", in.admin+"/admin/rooms/default", testAdminToken, `{"paused":true}`).status == 200
	})
	defs, err := in.parts.definitions.RoomDefinitions(context.Background())
	if err != nil || !defs["default"].Paused {
		t.Fatalf("definitions %+v, %v", defs, err)
	}
}

// TestAdminDeleteRoom: DELETE refuses a room anyone is in (409
// room_not_empty, nothing changed) unless forced, refuses a WR_ROOMS room
// (409 room_configured), answers 404 for an unknown room; a deleted room
// is gone from Redis, Postgres and the listing, its users are told (a poll
// is 404 not_in_queue, a stream ends with gone), enters are 404, and the
// delete is audited.
func TestAdminDeleteRoom(t *testing.T) {
	e := newEnv(t)
	in := e.start(nil)
	ctx := context.Background()
	del := func(room, query string) response {
		t.Helper()
		return do(t, "DELETE", in.admin+"/admin/rooms/"+room+query, testAdminToken, nil)
	}
	for _, c := range []struct {
		room, query string
		status      int
		code        string
	}{
		{"nosuch", "", 404, "room_not_found"},
		{"Bad%7B", "", 400, "invalid_request"},
		{"default", "", 409, "room_configured"},
		{"default", "?force=true", 409, "room_configured"},
	} {
		if r := del(c.room, c.query); r.status != c.status || r.str("error") != c.code || r.str("message") == "" {
			t.Errorf("DELETE %s%s: %d %s; want %d %s", c.room, c.query, r.status, r.raw, c.status, c.code)
		}
	}
	if r := do(t, "PUT", in.admin+"/admin/rooms/sale", testAdminToken, `{"targetActive":1}`); r.status != 200 {
		t.Fatal(r.raw)
	}
	if r := del("sale", "?force=maybe"); r.status != 400 {
		t.Fatalf("force=maybe: %d %s", r.status, r.raw)
	}
	first := in.enter(user(1), "sale").str("queueToken")
	in.admit("sale") // user1 admitted
	waiting := in.enter(user(2), "sale").str("queueToken")
	stream := sseFrom(t, in, "127.0.0.1", "sale", waiting)
	r := del("sale", "")
	if r.status != 409 || r.str("error") != "room_not_empty" || !strings.Contains(r.str("message"), "1 waiting") {
		t.Fatalf("DELETE of a busy room: %d %s", r.status, r.raw)
	}
	if defs, err := in.parts.definitions.RoomDefinitions(ctx); err != nil || defs["sale"].Target != 1 {
		t.Fatalf("the refused delete touched the definition: %+v, %v", defs, err)
	}
	if r := del("sale", "?force=true"); r.status != 204 {
		t.Fatalf("forced DELETE: %d %s", r.status, r.raw)
	}
	if m := stream.until(t, "the stream's end", func(typ string, _ streamMsg) bool { return typ == "gone" }); m.Error != "not_in_queue" {
		t.Fatalf("gone event: %+v", m)
	}
	for _, qt := range []string{first, waiting} {
		if r := in.position("sale", qt); r.status != 404 || r.str("error") != "not_in_queue" {
			t.Fatalf("poll after the delete: %d %s", r.status, r.raw)
		}
	}
	if r := do(t, "POST", in.base+"/api/v1/rooms/sale/enter", in.login(user(3)), nil); r.status != 404 || r.str("error") != "room_not_found" {
		t.Fatalf("enter after the delete: %d %s", r.status, r.raw)
	}
	if r := in.adminRoom("sale"); r.status != 404 {
		t.Fatalf("GET after the delete: %d %s", r.status, r.raw)
	}
	if got := allRooms(t, in, "", 10); !slices.Equal(got, []string{"default"}) {
		t.Fatalf("rooms after the delete: %v", got)
	}
	if defs, err := in.parts.definitions.RoomDefinitions(ctx); err != nil || len(defs) != 0 {
		t.Fatalf("definitions after the delete: %+v, %v", defs, err)
	}
	if r := del("sale", "?force=true"); r.status != 404 {
		t.Fatalf("deleted twice: %d %s", r.status, r.raw)
	}
	a := auditOf(t, in, "")
	if len(a) == 0 || a[0].Method != "DELETE" || a[0].Path != "/admin/rooms/sale?force=true" || string(a[0].After) != "null" || string(a[0].Before) == "null" {
		t.Fatalf("audit of the delete: %+v", a[0])
	}
}

// TestAdminDeleteLeavesNothing: a deleted room leaves no key under its
// hash tag but those that expire by themselves (a gateway session, a
// token's restore count, the adaptive controller's per-window signals and
// leases), so a room created again under its name inherits nothing: not
// the history, not the adaptive state, not the counters.
func TestAdminDeleteLeavesNothing(t *testing.T) {
	e := newEnv(t)
	in := e.start(nil)
	ctx := context.Background()
	if r := do(t, "PUT", in.admin+"/admin/rooms/sale", testAdminToken, `{"mode":"adaptive","targetActive":3}`); r.status != 200 {
		t.Fatal(r.raw)
	}
	in.enter(user(1), "sale")
	in.admit("sale")
	in.enter(user(2), "sale")
	// What the background loops write for the room: a history point, the
	// controller's state, the order signals.
	if _, err := in.parts.History.Record(ctx, "sale"); err != nil {
		t.Fatal(err)
	}
	if err := in.parts.Queue.RecordMeasured(ctx, "sale", 6*time.Second, 0.1, 0); err != nil { // the last sale's figures
		t.Fatal(err)
	}
	in.parts.Recorder.Order("sale", 20*time.Millisecond, false, time.Now())
	if err := in.parts.Recorder.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := in.parts.Controller.Step(ctx, "sale", time.Now().Add(in.parts.Controller.Window())); err != nil {
		t.Fatal(err)
	}
	tag := in.parts.Queue.RoomKey("sale", "")
	before, _ := e.rdb.Keys(ctx, tag+"*").Result()
	for _, name := range []string{"history", "adaptive", "cfg", "stats", queue.MeasuredKey} {
		if !slices.Contains(before, tag+name) {
			t.Fatalf("set-up: no key %s among %v", name, before)
		}
	}
	if r := do(t, "DELETE", in.admin+"/admin/rooms/sale?force=1", testAdminToken, nil); r.status != 204 {
		t.Fatalf("DELETE: %d %s", r.status, r.raw)
	}
	left, err := e.rdb.Keys(ctx, tag+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range left {
		name := strings.TrimPrefix(k, tag)
		expiring := strings.HasPrefix(name, "sig:") || strings.HasPrefix(name, "lease:") ||
			strings.HasPrefix(name, "session:") || strings.HasPrefix(name, "restores:")
		if ttl, err := e.rdb.PTTL(ctx, k).Result(); !expiring || err != nil || ttl <= 0 {
			t.Errorf("left behind: %s (ttl %v, %v)", k, ttl, err)
		}
	}
	if r := do(t, "PUT", in.admin+"/admin/rooms/sale", testAdminToken, `{}`); r.status != 200 {
		t.Fatal(r.raw)
	}
	d := in.adminRoom("sale")
	if d.num("entered") != 0 || d.num("admitted") != 0 || d.str("mode") != "fixed" || d.body["lastChange"] != nil {
		t.Fatalf("created again: %s", d.raw)
	}
	if pts, err := in.parts.History.Since(ctx, "sale", 0); err != nil || len(pts) != 0 {
		t.Fatalf("history of the new room: %v, %v", pts, err)
	}
}
