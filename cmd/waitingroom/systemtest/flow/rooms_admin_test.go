package flow

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

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/queue"
	"waitingroom/server/pgstore/pgtest"
)

// refuseDatabase returns the switch of e's database's connections (e from
// NewEnvOwnDatabase): off, it also ends the sessions connected. The test's
// end allows them again.
func refuseDatabase(t *testing.T, e *systemtest.Env) func(allow bool) {
	t.Helper()
	pc, err := pgx.ParseConfig(e.DBURL)
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
func allRooms(t testing.TB, in *systemtest.Instance, query string, limit int) []string {
	t.Helper()
	var names []string
	after := ""
	for pages := 0; ; pages++ {
		r := systemtest.Do(t, "GET", fmt.Sprintf("%s/admin/rooms?limit=%d&after=%s&%s", in.Admin, limit, after, query), systemtest.TestAdminToken, nil)
		var p roomsPage
		if r.Status != 200 || json.Unmarshal([]byte(r.Raw), &p) != nil || len(p.Rooms) > limit || pages > 100 {
			t.Fatalf("GET /admin/rooms?%s after %q: %d %s", query, after, r.Status, r.Raw)
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
	e := systemtest.NewEnv(t)
	in := e.Start(nil)
	want := []string{"default"}
	for i := range 23 {
		for _, p := range []string{"shoe", "show"} {
			name := fmt.Sprintf("%s-%02d", p, i)
			want = append(want, name)
			if r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/"+name, systemtest.TestAdminToken, `{}`); r.Status != 200 {
				t.Fatalf("create %s: %d %s", name, r.Status, r.Raw)
			}
		}
	}
	slices.Sort(want)
	for i, room := range []string{"shoe-04", "show-11", "show-12"} {
		in.Enter(systemtest.User(i+1), room)
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
	r := systemtest.Do(t, "GET", in.Admin+"/admin/rooms", systemtest.TestAdminToken, nil)
	var p struct {
		Rooms []map[string]any `json:"rooms"`
		Next  *string          `json:"next"`
	}
	if json.Unmarshal([]byte(r.Raw), &p) != nil || len(p.Rooms) != len(want) || p.Next != nil || p.Rooms[0]["targetActive"] != 5.0 {
		t.Fatalf("default page: %s", r.Raw)
	}
	for _, q := range []string{"limit=0", "limit=1001", "limit=x", "after=Bad%7B", "prefix=-x", "busy=maybe", "prefix=" + strings.Repeat("a", 65)} {
		r := systemtest.Do(t, "GET", in.Admin+"/admin/rooms?"+q, systemtest.TestAdminToken, nil)
		if r.Status != 400 || r.Str("error") != "invalid_request" || r.Str("message") == "" {
			t.Errorf("?%s: %d %s; want 400 invalid_request", q, r.Status, r.Raw)
		}
	}

	// Stats: the busy rooms by default, a page at a time; ?room= one room.
	stats := func(query string) (rooms []string, next *string) {
		r := systemtest.Do(t, "GET", in.Admin+"/admin/stats?"+query, systemtest.TestAdminToken, nil)
		var d struct {
			Rooms []struct {
				Room string `json:"room"`
			} `json:"rooms"`
			Next *string `json:"next"`
		}
		if r.Status != 200 || json.Unmarshal([]byte(r.Raw), &d) != nil {
			t.Fatalf("stats?%s: %d %s", query, r.Status, r.Raw)
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
	if r := systemtest.Do(t, "GET", in.Admin+"/admin/stats?limit=101", systemtest.TestAdminToken, nil); r.Status != 400 {
		t.Fatalf("stats limit 101: %d %s", r.Status, r.Raw)
	}
}

// TestAdminRoomDefinitionSurvivesRedisLoss: a room created and changed
// through the admin API is recorded in Postgres, and reads back from there
// equal to what Redis held, after Redis lost every key; an adaptive
// room's recorded target is the operator's, not the controller's.
func TestAdminRoomDefinitionSurvivesRedisLoss(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(nil)
	ctx := context.Background()
	put := func(room, body string) {
		t.Helper()
		if r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/"+room, systemtest.TestAdminToken, body); r.Status != 200 {
			t.Fatalf("PUT %s %s: %d %s", room, body, r.Status, r.Raw)
		}
	}
	put("sale", `{"targetActive":12,"entryTtl":"90s","method":"random","opensAt":"2031-05-01T12:00:00Z","displayName":"Spring sale","expectedOrderSeconds":4.5,"prequeueParts":3}`)
	put("sale", `{"paused":true,"message":"back at noon"}`)
	put("flex", `{"mode":"adaptive","targetActive":8,"minActive":2,"maxActive":40}`)
	// The controller moves flex's target in Redis; the operator then
	// changes only its message.
	if err := e.Redis.HSet(ctx, in.Parts.Queue.RoomKey("flex", queue.ConfigKey), "target", 31).Err(); err != nil {
		t.Fatal(err)
	}
	put("flex", `{"message":"hello"}`)
	live := map[string]queue.RoomConfig{}
	for _, room := range []string{"sale", "flex"} {
		r, err := in.Parts.Queue.Room(ctx, room)
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
	keys, err := e.Redis.Keys(ctx, e.Prefix+"*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatal(keys, err)
	}
	if err := e.Redis.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Parts.Queue.Room(ctx, "sale"); err == nil {
		t.Fatal("sale survived in Redis")
	}
	defs, err := in.Parts.RoomRecord.RoomDefinitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(defs, live) {
		t.Fatalf("definitions %+v\nwant %+v", defs, live)
	}
	// What the admission loop does with them: the room is back as it was.
	if err := in.Parts.Queue.EnsureRoom(ctx, "sale", defs["sale"]); err != nil {
		t.Fatal(err)
	}
	if r, err := in.Parts.Queue.Room(ctx, "sale"); err != nil || !reflect.DeepEqual(r.RoomConfig, live["sale"]) {
		t.Fatalf("recreated %+v, %v\nwant %+v", r.RoomConfig, err, live["sale"])
	}
}

// TestAdminPutPostgresDown: with Postgres refusing connections a PUT
// still takes effect (a pause in an incident must), answers 503
// definition_not_recorded in the contract's form, and is audited; the
// same PUT once Postgres is back records it.
func TestAdminPutPostgresDown(t *testing.T) {
	e := systemtest.NewEnvOwnDatabase(t)
	in := e.Start(nil)
	setAllow := refuseDatabase(t, e)
	setAllow(false)
	r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/default", systemtest.TestAdminToken, `{"paused":true}`)
	if r.Status != 503 || r.Str("error") != "definition_not_recorded" || r.Str("message") == "" {
		t.Fatalf("PUT with Postgres down: %d %s", r.Status, r.Raw)
	}
	if in.AdminRoom("default").Body["paused"] != true {
		t.Fatal("the pause did not take effect")
	}
	if a := systemtest.AuditOf(t, in, ""); len(a) == 0 || a[0].Path != "/admin/rooms/default" {
		t.Fatalf("audit: %+v", a)
	}
	// A delete refuses before touching anything.
	if r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/other", systemtest.TestAdminToken, `{}`); r.Status != 503 {
		t.Fatalf("create with Postgres down: %d %s", r.Status, r.Raw)
	}
	if r := systemtest.Do(t, "DELETE", in.Admin+"/admin/rooms/other", systemtest.TestAdminToken, nil); r.Status != 503 || r.Str("error") != "unavailable" {
		t.Fatalf("DELETE with Postgres down: %d %s", r.Status, r.Raw)
	}
	if r := in.AdminRoom("other"); r.Status != 200 {
		t.Fatalf("the refused delete removed the room: %d %s", r.Status, r.Raw)
	}
	setAllow(true)
	systemtest.WaitFor(t, "the PUT recorded once Postgres is back", func() bool {
		return systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/default", systemtest.TestAdminToken, `{"paused":true}`).Status == 200
	})
	defs, err := in.Parts.RoomRecord.RoomDefinitions(context.Background())
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
	e := systemtest.NewEnv(t)
	in := e.Start(nil)
	ctx := context.Background()
	del := func(room, query string) systemtest.Response {
		t.Helper()
		return systemtest.Do(t, "DELETE", in.Admin+"/admin/rooms/"+room+query, systemtest.TestAdminToken, nil)
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
		if r := del(c.room, c.query); r.Status != c.status || r.Str("error") != c.code || r.Str("message") == "" {
			t.Errorf("DELETE %s%s: %d %s; want %d %s", c.room, c.query, r.Status, r.Raw, c.status, c.code)
		}
	}
	if r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/sale", systemtest.TestAdminToken, `{"targetActive":1}`); r.Status != 200 {
		t.Fatal(r.Raw)
	}
	if r := del("sale", "?force=maybe"); r.Status != 400 {
		t.Fatalf("force=maybe: %d %s", r.Status, r.Raw)
	}
	first := in.Enter(systemtest.User(1), "sale").Str("queueToken")
	in.Admit("sale") // user1 admitted
	waiting := in.Enter(systemtest.User(2), "sale").Str("queueToken")
	stream := systemtest.SSEFrom(t, in, "127.0.0.1", "sale", waiting)
	r := del("sale", "")
	if r.Status != 409 || r.Str("error") != "room_not_empty" || !strings.Contains(r.Str("message"), "1 waiting") {
		t.Fatalf("DELETE of a busy room: %d %s", r.Status, r.Raw)
	}
	if defs, err := in.Parts.RoomRecord.RoomDefinitions(ctx); err != nil || defs["sale"].Target != 1 {
		t.Fatalf("the refused delete touched the definition: %+v, %v", defs, err)
	}
	if r := del("sale", "?force=true"); r.Status != 204 {
		t.Fatalf("forced DELETE: %d %s", r.Status, r.Raw)
	}
	if m := stream.Until(t, "the stream's end", func(typ string, _ systemtest.StreamMsg) bool { return typ == "gone" }); m.Error != "not_in_queue" {
		t.Fatalf("gone event: %+v", m)
	}
	for _, qt := range []string{first, waiting} {
		if r := in.Position("sale", qt); r.Status != 404 || r.Str("error") != "not_in_queue" {
			t.Fatalf("poll after the delete: %d %s", r.Status, r.Raw)
		}
	}
	if r := systemtest.Do(t, "POST", in.Base+"/api/v1/rooms/sale/enter", in.Login(systemtest.User(3)), nil); r.Status != 404 || r.Str("error") != "room_not_found" {
		t.Fatalf("enter after the delete: %d %s", r.Status, r.Raw)
	}
	if r := in.AdminRoom("sale"); r.Status != 404 {
		t.Fatalf("GET after the delete: %d %s", r.Status, r.Raw)
	}
	if got := allRooms(t, in, "", 10); !slices.Equal(got, []string{"default"}) {
		t.Fatalf("rooms after the delete: %v", got)
	}
	if defs, err := in.Parts.RoomRecord.RoomDefinitions(ctx); err != nil || len(defs) != 0 {
		t.Fatalf("definitions after the delete: %+v, %v", defs, err)
	}
	if r := del("sale", "?force=true"); r.Status != 404 {
		t.Fatalf("deleted twice: %d %s", r.Status, r.Raw)
	}
	a := systemtest.AuditOf(t, in, "")
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
	e := systemtest.NewEnv(t)
	in := e.Start(nil)
	ctx := context.Background()
	if r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/sale", systemtest.TestAdminToken, `{"mode":"adaptive","targetActive":3}`); r.Status != 200 {
		t.Fatal(r.Raw)
	}
	in.Enter(systemtest.User(1), "sale")
	in.Admit("sale")
	in.Enter(systemtest.User(2), "sale")
	// What the background loops write for the room: a history point, the
	// controller's state, the order signals.
	if _, err := in.Parts.History.Record(ctx, "sale"); err != nil {
		t.Fatal(err)
	}
	if err := in.Parts.Queue.RecordMeasured(ctx, "sale", 6*time.Second, 0.1, 0); err != nil { // the last sale's figures
		t.Fatal(err)
	}
	in.Parts.Recorder.Order("sale", 20*time.Millisecond, false, time.Now())
	if err := in.Parts.Recorder.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Parts.Controller.Step(ctx, "sale", time.Now().Add(in.Parts.Controller.Window())); err != nil {
		t.Fatal(err)
	}
	tag := in.Parts.Queue.RoomKey("sale", "")
	before, _ := e.Redis.Keys(ctx, tag+"*").Result()
	for _, name := range []string{"history", "adaptive", "cfg", "stats", queue.MeasuredKey} {
		if !slices.Contains(before, tag+name) {
			t.Fatalf("set-up: no key %s among %v", name, before)
		}
	}
	if r := systemtest.Do(t, "DELETE", in.Admin+"/admin/rooms/sale?force=1", systemtest.TestAdminToken, nil); r.Status != 204 {
		t.Fatalf("DELETE: %d %s", r.Status, r.Raw)
	}
	left, err := e.Redis.Keys(ctx, tag+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range left {
		name := strings.TrimPrefix(k, tag)
		expiring := strings.HasPrefix(name, "sig:") || strings.HasPrefix(name, "lease:") ||
			strings.HasPrefix(name, "session:") || strings.HasPrefix(name, "restores:")
		if ttl, err := e.Redis.PTTL(ctx, k).Result(); !expiring || err != nil || ttl <= 0 {
			t.Errorf("left behind: %s (ttl %v, %v)", k, ttl, err)
		}
	}
	if r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/sale", systemtest.TestAdminToken, `{}`); r.Status != 200 {
		t.Fatal(r.Raw)
	}
	d := in.AdminRoom("sale")
	if d.Num("entered") != 0 || d.Num("admitted") != 0 || d.Str("mode") != "fixed" || d.Body["lastChange"] != nil {
		t.Fatalf("created again: %s", d.Raw)
	}
	if pts, err := in.Parts.History.Since(ctx, "sale", 0); err != nil || len(pts) != 0 {
		t.Fatalf("history of the new room: %v, %v", pts, err)
	}
}
