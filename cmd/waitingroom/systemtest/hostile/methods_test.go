package hostile

import (
	"strconv"
	"testing"
	"time"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/queue"
)

// TestScheduledRandomSale: before opensAt users wait in the pre-queue
// (PREQUEUE, an opening time, no position) over polls, SSE and WebSocket;
// the admission loop opens the room when the time comes; streams then show
// WAITING at the user's ZRANK, a poll gets WAITING with a fresh queue
// token, and the room shows the recorded seed, which reproduces the order.
func TestScheduledRandomSale(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	opens := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	r := in.PutRoom("default", map[string]any{"method": "random", "opensAt": opens.Format(time.RFC3339)})
	if r.Status != 200 || r.Str("method") != "random" || r.Str("opensAt") != opens.Format(time.RFC3339) ||
		r.Body["preQueue"] != float64(0) || r.Body["shuffleSeed"] != nil {
		t.Fatalf("PUT schedule = %d %s", r.Status, r.Raw)
	}
	const n = 6
	tokens := make([]string, n+1)
	for i := 1; i <= n; i++ {
		got := in.Enter(systemtest.User(i), "default")
		if got.Str("status") != "PREQUEUE" || got.Body["position"] != nil || got.Str("opensAt") == "" ||
			got.Num("opensInMs") <= 0 || got.Num("waiting") != int64(i) {
			t.Fatalf("enter before the opening = %s", got.Raw)
		}
		tokens[i] = got.Str("queueToken")
	}
	if p := in.Position("default", tokens[2]); p.Status != 200 || p.Str("status") != "PREQUEUE" || p.Num("pollAfterMs") < 1000 {
		t.Fatalf("poll in the pre-queue = %d %s", p.Status, p.Raw)
	}
	if got := in.AdminRoom("default"); got.Num("preQueue") != n || got.Num("waiting") != 0 {
		t.Fatalf("room before the opening = %s", got.Raw)
	}
	sse := systemtest.OpenSSE(t, in, "default", tokens[1])
	if typ, m := sse.Next(t); typ != "status" || m.Status != "PREQUEUE" {
		t.Fatalf("first SSE event = %s %+v", typ, m)
	}
	ws := systemtest.DialWS(t, in, "default", tokens[3])
	if m := systemtest.ReadWS(t, ws); m.Type != "status" || m.Status != "PREQUEUE" {
		t.Fatalf("first WebSocket frame = %+v", m)
	}

	// Bring the opening forward to now: the next tick opens the room.
	if r := in.PutRoom("default", map[string]any{"opensAt": nil}); r.Status != 200 || r.Body["opensAt"] != nil {
		t.Fatalf("clearing opensAt = %d %s", r.Status, r.Raw)
	}
	m := sse.Until(t, "WAITING after the opening", func(_ string, m systemtest.StreamMsg) bool { return m.Status == "WAITING" })
	if want := systemtest.Zrank(t, e, "default", "1"); m.Position != want || want == 0 {
		t.Fatalf("SSE position after the opening = %d, ZRANK %d", m.Position, want)
	}
	var w systemtest.StreamMsg
	for w.Status != "WAITING" {
		w = systemtest.ReadWS(t, ws)
	}
	if want := systemtest.Zrank(t, e, "default", "3"); w.Position != want {
		t.Fatalf("WebSocket position after the opening = %d, ZRANK %d", w.Position, want)
	}
	p := in.Position("default", tokens[2])
	if p.Str("status") != "WAITING" || p.Num("position") != systemtest.Zrank(t, e, "default", "2") || p.Str("queueToken") == "" {
		t.Fatalf("poll after the opening = %s", p.Raw)
	}
	if again := in.Position("default", p.Str("queueToken")); again.Num("position") != p.Num("position") || again.Str("queueToken") != "" {
		t.Fatalf("poll with the new queue token = %s", again.Raw)
	}

	room := in.AdminRoom("default")
	seed, _ := room.Body["shuffleSeed"].(string)
	if seed == "" || room.Num("preQueue") != 0 || room.Num("waiting") != n {
		t.Fatalf("room after the opening = %s", room.Raw)
	}
	// Audit: the seed and the users shuffled (user ids 1..6) give the queue.
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(i + 1)
	}
	for pos, id := range queue.Shuffle(seed, ids) {
		if got := systemtest.Zrank(t, e, "default", id); got != int64(pos+1) {
			t.Fatalf("user %s is at %d, Shuffle(shuffleSeed) puts them at %d", id, got, pos+1)
		}
	}
}

// TestRejectAndPassthrough: reject answers enter with 423 room_closed and
// tells those waiting (CLOSED, place kept); passthrough admits at enter.
func TestRejectAndPassthrough(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_TARGET_ACTIVE": "0"})
	waiting := in.Enter(systemtest.User(1), "default")
	if r := in.PutRoom("default", map[string]any{"method": "reject"}); r.Status != 200 || r.Str("method") != "reject" {
		t.Fatalf("PUT reject = %d %s", r.Status, r.Raw)
	}
	r := systemtest.Do(t, "POST", in.Base+"/api/v1/rooms/default/enter", in.Login(systemtest.User(2)), nil)
	if r.Status != 423 || r.Str("error") != "room_closed" || r.Str("message") == "" {
		t.Fatalf("enter a closed room = %d %s", r.Status, r.Raw)
	}
	if p := in.Position("default", waiting.Str("queueToken")); p.Str("status") != "CLOSED" || p.Num("position") != 1 {
		t.Fatalf("poll of a waiting user in a closed room = %s", p.Raw)
	}
	if in.Admit("default") != 0 {
		t.Fatal("a closed room admitted someone")
	}

	in.PutRoom("default", map[string]any{"method": "passthrough"})
	got := in.Enter(systemtest.User(3), "default")
	if got.Str("status") != "READY" || got.Str("entryToken") == "" {
		t.Fatalf("enter a passthrough room = %s", got.Raw)
	}
	if o := in.Order(got.Str("queueToken"), got.Str("entryToken"), 1, 1); o.Status != 201 {
		t.Fatalf("order after passthrough = %d %s", o.Status, o.Raw)
	}
	if in.Admit("default") != 1 {
		t.Fatal("passthrough did not admit the user already waiting (targetActive 0)")
	}
}

func TestRoomMethodBadInput(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(nil)
	for _, body := range []string{
		`{"method":"lifo"}`, `{"method":""}`, `{"method":3}`,
		`{"opensAt":"tomorrow"}`, `{"opensAt":"2026-11-29 10:00"}`, `{"opensAt":1795988645}`, `{"opensAt":{}}`,
	} {
		r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/default", systemtest.TestAdminToken, body)
		if r.Status != 400 || r.Str("error") != "invalid_request" {
			t.Errorf("PUT %s = %d %s, want 400 invalid_request", body, r.Status, r.Raw)
		}
	}
	got := in.AdminRoom("default")
	if got.Str("method") != "fifo" || got.Body["opensAt"] != nil {
		t.Fatalf("room after refused changes = %s", got.Raw)
	}
	r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/default", systemtest.TestAdminToken, `{"opensAt":"2030-01-02T03:04:05+09:00"}`)
	if r.Status != 200 || r.Str("opensAt") != "2030-01-01T18:04:05Z" {
		t.Fatalf("PUT a valid opensAt = %d %s", r.Status, r.Raw)
	}
	if r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/default", systemtest.TestAdminToken, `{"opensAt":""}`); r.Status != 200 || r.Body["opensAt"] != nil {
		t.Fatalf("PUT opensAt \"\" = %d %s", r.Status, r.Raw)
	}
}
