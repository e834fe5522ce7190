package flow

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"waitingroom/cmd/waitingroom/compose"
	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/queue"
)

// The honest states, end to end against real Redis: a paused room is said
// by the API, a user dropped as idle hears why, the operator can tell
// waiting users something, and the page can read a room's name before
// entering it.

// pushWithin is how long a change the operator makes may take to reach an
// open stream: "at once", with room for a loaded machine.
const pushWithin = 3 * time.Second

// sseUntil reads s's events until one satisfies ok, within pushWithin.
func sseUntil(t *testing.T, s *systemtest.SSEStream, what string, ok func(typ string, data map[string]any) bool) map[string]any {
	t.Helper()
	cut := time.AfterFunc(pushWithin, func() { t.Logf("no %s within %v", what, pushWithin); s.Res.Body.Close() })
	defer cut.Stop()
	for {
		typ, data := s.Event(t)
		if ok(typ, data) {
			return data
		}
	}
}

// wsUntil reads c's frames until one satisfies ok, within pushWithin.
func wsUntil(t *testing.T, c *websocket.Conn, what string, ok func(data map[string]any) bool) map[string]any {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(pushWithin))
	for {
		_, b, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("ws: waiting for %s: %v", what, err)
		}
		var data map[string]any
		if err := json.Unmarshal(b, &data); err != nil {
			t.Fatalf("ws frame %q: %v", b, err)
		}
		if ok(data) {
			return data
		}
	}
}

// isStatus is a status with the given pause and message ("" and false
// mean absent).
func isStatus(paused bool, message string) func(map[string]any) bool {
	return func(d map[string]any) bool {
		p, _ := d["paused"].(bool)
		m, _ := d["message"].(string)
		_, hasPaused := d["paused"]
		_, hasMessage := d["message"]
		return d["status"] != nil && p == paused && m == message && hasPaused == paused && hasMessage == (message != "")
	}
}

// checkPaused: a paused room's WAITING document says paused and withholds
// the ETA. (A running room here has measured nothing yet, so it withholds
// the ETA too: TestETAWithheldUntilMeasured shows one given.)
func checkPaused(t *testing.T, what string, d map[string]any, paused bool) {
	t.Helper()
	_, hasETA := d["etaSeconds"]
	p, _ := d["paused"].(bool)
	if d["status"] != "WAITING" || p != paused || (paused && (hasETA || d["etaKnown"] != false)) {
		t.Fatalf("%s = %v, want WAITING with paused %v (and the ETA withheld when paused)", what, d, paused)
	}
}

// TestPauseIsSaidByTheAPI: while the operator pauses a room, polls, enter
// (a newcomer's too: a paused room takes arrivals) and every open SSE and
// WebSocket stream say "paused": true with the ETA withheld, and the
// status stays WAITING; resuming is pushed the same way.
func TestPauseIsSaidByTheAPI(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_TARGET_ACTIVE": "5"}) // the loop ticks once a minute: nobody is admitted
	q1 := in.Enter(systemtest.User(1), "default").Str("queueToken")
	q2 := in.Enter(systemtest.User(2), "default").Str("queueToken")
	checkPaused(t, "a poll before the pause", in.Position("default", q2).Body, false)
	sse := systemtest.OpenSSE(t, in, "default", q2)
	ws := systemtest.DialWS(t, in, "default", q1)
	sseUntil(t, sse, "the first status", func(typ string, d map[string]any) bool { return typ == "status" })
	wsUntil(t, ws, "the first status", func(d map[string]any) bool { return d["type"] == "status" })

	in.MustPutRoom("default", map[string]any{"paused": true})
	checkPaused(t, "the SSE status", sseUntil(t, sse, "paused", func(typ string, d map[string]any) bool { return isStatus(true, "")(d) }), true)
	checkPaused(t, "the WebSocket status", wsUntil(t, ws, "paused", isStatus(true, "")), true)
	p := in.Position("default", q2)
	checkPaused(t, "a poll", p.Body, true)
	if p.Num("position") != 2 {
		t.Fatalf("poll while paused = %s, want the place kept", p.Raw)
	}
	checkPaused(t, "entering again", in.Enter(systemtest.User(2), "default").Body, true)
	newcomer := in.Enter(systemtest.User(3), "default")
	checkPaused(t, "a newcomer while paused", newcomer.Body, true)
	if newcomer.Num("position") != 3 {
		t.Fatalf("a newcomer while paused = %s, want a place behind the two waiting", newcomer.Raw)
	}

	in.MustPutRoom("default", map[string]any{"paused": false})
	checkPaused(t, "the SSE status after resuming", sseUntil(t, sse, "resumed", func(typ string, d map[string]any) bool { return isStatus(false, "")(d) }), false)
	checkPaused(t, "the WebSocket status after resuming", wsUntil(t, ws, "resumed", isStatus(false, "")), false)
	checkPaused(t, "a poll after resuming", in.Position("default", q2).Body, false)
}

// TestOperatorMessageIsPushedAndPolled: a message set through the admin API
// is shown by GET, pushed at once to every open stream, carried by polls
// and enter, refused (naming the field) when too long or not plain text,
// and cleared by "".
func TestOperatorMessageIsPushedAndPolled(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_TARGET_ACTIVE": "0"})
	q1 := in.Enter(systemtest.User(1), "default").Str("queueToken")
	q2 := in.Enter(systemtest.User(2), "default").Str("queueToken")
	sse := systemtest.OpenSSE(t, in, "default", q1)
	ws := systemtest.DialWS(t, in, "default", q2)
	sseUntil(t, sse, "the first status", func(typ string, d map[string]any) bool { return typ == "status" })
	wsUntil(t, ws, "the first status", func(d map[string]any) bool { return d["type"] == "status" })

	const msg = "The sale restarts at 10:30.\n10시 30분에 다시 시작합니다."
	if r := in.MustPutRoom("default", map[string]any{"message": msg}); r.Str("message") != msg {
		t.Fatalf("PUT answer = %s", r.Raw)
	}
	if r := in.AdminRoom("default"); r.Str("message") != msg {
		t.Fatalf("GET /admin/rooms/default = %s", r.Raw)
	}
	sseUntil(t, sse, "the message", func(typ string, d map[string]any) bool { return typ == "status" && isStatus(false, msg)(d) })
	wsUntil(t, ws, "the message", isStatus(false, msg))
	if p := in.Position("default", q1); p.Str("message") != msg || p.Str("status") != "WAITING" {
		t.Fatalf("poll = %s", p.Raw)
	}
	if r := in.Enter(systemtest.User(3), "default"); r.Str("message") != msg {
		t.Fatalf("enter = %s", r.Raw)
	}

	for _, bad := range []struct{ body, field string }{
		{`{"message":"` + strings.Repeat("x", 501) + `"}`, "message"},
		{`{"message":"ring\u0007"}`, "message"},
		{"{\"message\":\"bad \xff byte\"}", "message"},
		{`{"message":7}`, "message"},
		{`{"displayName":"` + strings.Repeat("x", 81) + `"}`, "displayName"},
		{`{"displayName":"two\nlines"}`, "displayName"},
		{`{"description":"` + strings.Repeat("x", 501) + `"}`, "description"},
	} {
		r := in.PutRoom("default", bad.body)
		if r.Status != 400 || r.Str("error") != "invalid_request" || !strings.HasPrefix(r.Str("message"), bad.field+" ") {
			t.Errorf("PUT %.60s… = %d %s, want 400 naming %s", bad.body, r.Status, r.Raw, bad.field)
		}
	}
	if r := in.AdminRoom("default"); r.Str("message") != msg {
		t.Fatalf("a refused PUT changed the message: %s", r.Raw)
	}

	in.MustPutRoom("default", map[string]any{"message": ""})
	sseUntil(t, sse, "the message cleared", func(typ string, d map[string]any) bool { return typ == "status" && isStatus(false, "")(d) })
	wsUntil(t, ws, "the message cleared", isStatus(false, ""))
	if p := in.Position("default", q1); strings.Contains(p.Raw, `"message"`) {
		t.Fatalf("poll after clearing = %s", p.Raw)
	}
	if r := in.AdminRoom("default"); r.Str("message") != "" {
		t.Fatalf("GET after clearing = %s", r.Raw)
	}
}

// checkIdle: d is the idle refusal with the instance's timeout.
func checkIdle(t *testing.T, what string, d map[string]any, timeoutSeconds float64) {
	t.Helper()
	if d["error"] != "not_in_queue" || d["reason"] != "idle" || d["idleTimeoutSeconds"] != timeoutSeconds || d["message"] == "" {
		t.Fatalf("%s = %v, want not_in_queue with reason idle and idleTimeoutSeconds %v", what, d, timeoutSeconds)
	}
}

// TestIdleReasonIsGiven: a waiting user the admission run dropped for
// neither polling nor holding a stream for WR_IDLE_TIMEOUT gets 404
// not_in_queue with "reason":"idle" and the timeout from polls, leave and
// a stream's refusal; streams whose users are dropped end with a gone
// event saying the same. Entering again forgets it; a user who left gets
// the plain 404.
func TestIdleReasonIsGiven(t *testing.T) {
	systemtest.LongScenario(t)
	e := systemtest.NewEnv(t)
	// The one band gives a grace of 2.5 s (presence.Grace): user1 is
	// dropped 5 s after it ran out.
	in := e.Start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0", "WR_IDLE_TIMEOUT": "5s", "WR_POLL_BANDS": "*:500ms"})
	q1 := in.Enter(systemtest.User(1), "default").Str("queueToken") // never seen again
	q2 := in.Enter(systemtest.User(2), "default").Str("queueToken")
	q3 := in.Enter(systemtest.User(3), "default").Str("queueToken")
	sse := systemtest.OpenSSE(t, in, "default", q2)
	ws := systemtest.DialWS(t, in, "default", q3)
	systemtest.WaitWithin(t, 15*time.Second, "user1 to be dropped as idle", func() bool { return systemtest.Zrank(t, e, "default", "1") == 0 })

	p := in.Position("default", q1)
	if p.Status != 404 || !strings.HasPrefix(p.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("poll after the drop = %d %s", p.Status, p.Raw)
	}
	checkIdle(t, "the poll", p.Body, 5)
	checkIdle(t, "leave", systemtest.Do(t, "POST", in.Base+"/api/v1/rooms/default/leave", q1, nil).Body, 5)
	res, err := systemtest.StreamClient.Get(in.Base + "/api/v1/rooms/default/events?token=" + q1)
	if err != nil {
		t.Fatal(err)
	}
	var refusal map[string]any
	_ = json.NewDecoder(io.LimitReader(res.Body, 4096)).Decode(&refusal)
	res.Body.Close()
	if res.StatusCode != 404 {
		t.Fatalf("events after the drop = %d", res.StatusCode)
	}
	checkIdle(t, "the stream's refusal", refusal, 5)

	// Streams are present, so the loop keeps them; an admission run with a
	// far shorter idle timeout, once their expected return is made past,
	// drops their users all the same.
	strict := queue.New(e.Redis, queue.Options{Prefix: e.Prefix, IdleTimeout: time.Millisecond})
	systemtest.WaitFor(t, "the streams' users to be dropped", func() bool {
		systemtest.AgeSeen(t, e, in, "default")
		if _, err := strict.Admit(context.Background(), "default", 8); err != nil {
			t.Fatal(err)
		}
		return systemtest.Zrank(t, e, "default", "2") == 0 && systemtest.Zrank(t, e, "default", "3") == 0
	})
	checkIdle(t, "the SSE gone event", sseUntil(t, sse, "gone", func(typ string, _ map[string]any) bool { return typ == "gone" }), 5)
	gone := wsUntil(t, ws, "gone", func(d map[string]any) bool { return d["type"] == "gone" })
	checkIdle(t, "the WebSocket gone frame", gone, 5)

	// Entering again forgets the drop; leaving afterwards is the plain 404.
	again := in.Enter(systemtest.User(1), "default")
	if again.Str("status") != "WAITING" {
		t.Fatalf("entering again = %s", again.Raw)
	}
	q1 = again.Str("queueToken")
	if p := in.Position("default", q1); p.Status != 200 {
		t.Fatalf("poll after entering again = %d %s", p.Status, p.Raw)
	}
	if r := systemtest.Do(t, "POST", in.Base+"/api/v1/rooms/default/leave", q1, nil); r.Status != 204 {
		t.Fatalf("leave = %d %s", r.Status, r.Raw)
	}
	if p := in.Position("default", q1); p.Status != 404 || p.Str("error") != "not_in_queue" || p.Body["reason"] != nil || p.Body["idleTimeoutSeconds"] != nil {
		t.Fatalf("poll after leaving = %d %s, want the plain 404", p.Status, p.Raw)
	}
}

// TestIdleTimeoutDefault: WR_IDLE_TIMEOUT defaults to 5 minutes, a
// phone's realistic grace (an app switch, a locked screen).
func TestIdleTimeoutDefault(t *testing.T) {
	c, err := compose.LoadConfig(func(k string) string { return map[string]string{"WR_JWT_SECRET": systemtest.TestSecret}[k] })
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Queue.IdleTimeout; got != 5*time.Minute {
		t.Fatalf("WR_IDLE_TIMEOUT default = %v, want 5m", got)
	}
}

// TestRoomInfoIsPublic: GET /api/v1/rooms/{room} answers without a token
// with the room's public document (absent fields omitted), follows the
// operator's changes within about a second, and is 404 room_not_found for
// an unknown room.
func TestRoomInfoIsPublic(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(nil)
	r := systemtest.Do(t, "GET", in.Base+"/api/v1/rooms/default", "", nil)
	if r.Status != 200 || r.Raw != `{"room":"default","method":"fifo"}` || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("GET /api/v1/rooms/default = %d %s %v", r.Status, r.Raw, r.Header)
	}
	opens := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	in.MustPutRoom("default", map[string]any{"displayName": "Winter sale", "description": "Coats\nand hats",
		"message": "Back at 10:30", "paused": true, "method": "random", "opensAt": opens.Format(time.RFC3339)})
	if a := in.AdminRoom("default"); a.Str("displayName") != "Winter sale" || a.Str("description") != "Coats\nand hats" {
		t.Fatalf("GET /admin/rooms/default = %s", a.Raw)
	}
	want := `{"room":"default","displayName":"Winter sale","description":"Coats\nand hats","paused":true,"message":"Back at 10:30","opensAt":"` +
		opens.Format(time.RFC3339) + `","method":"random"}`
	systemtest.WaitWithin(t, 5*time.Second, "the public document to follow the change", func() bool {
		r = systemtest.Do(t, "GET", in.Base+"/api/v1/rooms/default", "", nil)
		return r.Raw == want
	})
	for _, path := range []string{"/api/v1/rooms/no-such-room", "/api/v1/rooms/Not%20A%20Room"} {
		if r := systemtest.Do(t, "GET", in.Base+path, "", nil); r.Status != http.StatusNotFound || r.Str("error") != "room_not_found" {
			t.Errorf("GET %s = %d %s, want 404 room_not_found", path, r.Status, r.Raw)
		}
	}
}
