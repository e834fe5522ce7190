package main

import (
	"strconv"
	"testing"
	"time"

	"waitingroom/queue"
)

func (in *instance) putRoom(room string, body any) response {
	in.t.Helper()
	return do(in.t, "PUT", in.admin+"/admin/rooms/"+room, testAdminToken, body)
}

// TestScheduledRandomSale: before opensAt users wait in the pre-queue
// (PREQUEUE, an opening time, no position) over polls, SSE and WebSocket;
// the admission loop opens the room when the time comes; streams then show
// WAITING at the user's ZRANK, a poll gets WAITING with a fresh queue
// token, and the room shows the recorded seed, which reproduces the order.
func TestScheduledRandomSale(t *testing.T) {
	e := newEnv(t)
	in := e.start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	opens := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	r := in.putRoom("default", map[string]any{"method": "random", "opensAt": opens.Format(time.RFC3339)})
	if r.status != 200 || r.str("method") != "random" || r.str("opensAt") != opens.Format(time.RFC3339) ||
		r.body["preQueue"] != float64(0) || r.body["shuffleSeed"] != nil {
		t.Fatalf("PUT schedule = %d %s", r.status, r.raw)
	}
	const n = 6
	tokens := make([]string, n+1)
	for i := 1; i <= n; i++ {
		got := in.enter(user(i), "default")
		if got.str("status") != "PREQUEUE" || got.body["position"] != nil || got.str("opensAt") == "" ||
			got.num("opensInMs") <= 0 || got.num("waiting") != int64(i) {
			t.Fatalf("enter before the opening = %s", got.raw)
		}
		tokens[i] = got.str("queueToken")
	}
	if p := in.position("default", tokens[2]); p.status != 200 || p.str("status") != "PREQUEUE" || p.num("pollAfterMs") < 1000 {
		t.Fatalf("poll in the pre-queue = %d %s", p.status, p.raw)
	}
	if got := in.adminRoom("default"); got.num("preQueue") != n || got.num("waiting") != 0 {
		t.Fatalf("room before the opening = %s", got.raw)
	}
	sse := openSSE(t, in, "default", tokens[1])
	if typ, m := sse.next(t); typ != "status" || m.Status != "PREQUEUE" {
		t.Fatalf("first SSE event = %s %+v", typ, m)
	}
	ws := dialWS(t, in, "default", tokens[3])
	if m := readWS(t, ws); m.Type != "status" || m.Status != "PREQUEUE" {
		t.Fatalf("first WebSocket frame = %+v", m)
	}

	// Bring the opening forward to now: the next tick opens the room.
	if r := in.putRoom("default", map[string]any{"opensAt": nil}); r.status != 200 || r.body["opensAt"] != nil {
		t.Fatalf("clearing opensAt = %d %s", r.status, r.raw)
	}
	m := sse.until(t, "WAITING after the opening", func(_ string, m streamMsg) bool { return m.Status == "WAITING" })
	if want := zrank(t, e, "default", "1"); m.Position != want || want == 0 {
		t.Fatalf("SSE position after the opening = %d, ZRANK %d", m.Position, want)
	}
	var w streamMsg
	for w.Status != "WAITING" {
		w = readWS(t, ws)
	}
	if want := zrank(t, e, "default", "3"); w.Position != want {
		t.Fatalf("WebSocket position after the opening = %d, ZRANK %d", w.Position, want)
	}
	p := in.position("default", tokens[2])
	if p.str("status") != "WAITING" || p.num("position") != zrank(t, e, "default", "2") || p.str("queueToken") == "" {
		t.Fatalf("poll after the opening = %s", p.raw)
	}
	if again := in.position("default", p.str("queueToken")); again.num("position") != p.num("position") || again.str("queueToken") != "" {
		t.Fatalf("poll with the new queue token = %s", again.raw)
	}

	room := in.adminRoom("default")
	seed, _ := room.body["shuffleSeed"].(string)
	if seed == "" || room.num("preQueue") != 0 || room.num("waiting") != n {
		t.Fatalf("room after the opening = %s", room.raw)
	}
	// Audit: the seed and the users shuffled (user ids 1..6) give the queue.
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(i + 1)
	}
	for pos, id := range queue.Shuffle(seed, ids) {
		if got := zrank(t, e, "default", id); got != int64(pos+1) {
			t.Fatalf("user %s is at %d, Shuffle(shuffleSeed) puts them at %d", id, got, pos+1)
		}
	}
}

// TestRejectAndPassthrough: reject answers enter with 423 room_closed and
// tells those waiting (CLOSED, place kept); passthrough admits at enter.
func TestRejectAndPassthrough(t *testing.T) {
	e := newEnv(t)
	in := e.start(map[string]string{"WR_TARGET_ACTIVE": "0"})
	waiting := in.enter(user(1), "default")
	if r := in.putRoom("default", map[string]any{"method": "reject"}); r.status != 200 || r.str("method") != "reject" {
		t.Fatalf("PUT reject = %d %s", r.status, r.raw)
	}
	r := do(t, "POST", in.base+"/api/v1/rooms/default/enter", in.login(user(2)), nil)
	if r.status != 423 || r.str("error") != "room_closed" || r.str("message") == "" {
		t.Fatalf("enter a closed room = %d %s", r.status, r.raw)
	}
	if p := in.position("default", waiting.str("queueToken")); p.str("status") != "CLOSED" || p.num("position") != 1 {
		t.Fatalf("poll of a waiting user in a closed room = %s", p.raw)
	}
	if in.admit("default") != 0 {
		t.Fatal("a closed room admitted someone")
	}

	in.putRoom("default", map[string]any{"method": "passthrough"})
	got := in.enter(user(3), "default")
	if got.str("status") != "READY" || got.str("entryToken") == "" {
		t.Fatalf("enter a passthrough room = %s", got.raw)
	}
	if o := in.order(got.str("queueToken"), got.str("entryToken"), 1, 1); o.status != 201 {
		t.Fatalf("order after passthrough = %d %s", o.status, o.raw)
	}
	if in.admit("default") != 1 {
		t.Fatal("passthrough did not admit the user already waiting (targetActive 0)")
	}
}

func TestRoomMethodBadInput(t *testing.T) {
	e := newEnv(t)
	in := e.start(nil)
	for _, body := range []string{
		`{"method":"lifo"}`, `{"method":""}`, `{"method":3}`,
		`{"opensAt":"tomorrow"}`, `{"opensAt":"2026-11-29 10:00"}`, `{"opensAt":1795988645}`, `{"opensAt":{}}`,
	} {
		r := do(t, "PUT", in.admin+"/admin/rooms/default", testAdminToken, body)
		if r.status != 400 || r.str("error") != "invalid_request" {
			t.Errorf("PUT %s = %d %s, want 400 invalid_request", body, r.status, r.raw)
		}
	}
	got := in.adminRoom("default")
	if got.str("method") != "fifo" || got.body["opensAt"] != nil {
		t.Fatalf("room after refused changes = %s", got.raw)
	}
	r := do(t, "PUT", in.admin+"/admin/rooms/default", testAdminToken, `{"opensAt":"2030-01-02T03:04:05+09:00"}`)
	if r.status != 200 || r.str("opensAt") != "2030-01-01T18:04:05Z" {
		t.Fatalf("PUT a valid opensAt = %d %s", r.status, r.raw)
	}
	if r := do(t, "PUT", in.admin+"/admin/rooms/default", testAdminToken, `{"opensAt":""}`); r.status != 200 || r.body["opensAt"] != nil {
		t.Fatalf("PUT opensAt \"\" = %d %s", r.status, r.raw)
	}
}
