package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/redis/go-redis/v9"

	"waitingroom/queue"
	"waitingroom/server/token"
	"waitingroom/stream/sseclient"
)

// streamMsg is one decoded push message.
type streamMsg struct {
	Type       string `json:"type"` // WebSocket only
	Status     string `json:"status"`
	Position   int64  `json:"position"`
	Waiting    int64  `json:"waiting"`
	EntryToken string `json:"entryToken"`
	Error      string `json:"error"`
	TS         int64  `json:"ts"`
	// degraded events
	Degraded     bool  `json:"degraded"`
	RetryAfterMs int64 `json:"retryAfterMs"`
}

// sseStream is an open SSE stream parsed by the WHATWG-conformant reader.
type sseStream struct {
	res *http.Response
	r   *sseclient.Reader
}

func openSSE(t testing.TB, in *instance, room, queueToken string) *sseStream {
	t.Helper()
	req, _ := http.NewRequest("GET", in.base+"/api/v1/rooms/"+room+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+queueToken)
	res, err := streamClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		t.Fatalf("events = %d %s %s", res.StatusCode, res.Header.Get("Content-Type"), b)
	}
	if res.Header.Get("Cache-Control") != "no-store" || res.Header.Get("X-Accel-Buffering") != "no" {
		t.Fatalf("stream headers = %v", res.Header)
	}
	s := &sseStream{res: res, r: sseclient.NewReader(bufio.NewReaderSize(res.Body, 4096))}
	t.Cleanup(func() { res.Body.Close() })
	return s
}

// streamClient has no overall timeout: streams stay open. Its
// connections are read once asked on (askingTransport) and not kept idle.
var streamClient = &http.Client{Transport: func() *http.Transport {
	tr := askingTransport(&net.Dialer{})
	tr.MaxIdleConnsPerHost = -1
	return tr
}()}

// next returns the next event as a message, with its SSE event type.
func (s *sseStream) next(t testing.TB) (string, streamMsg) {
	t.Helper()
	ev, err := s.r.Next()
	if err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	var m streamMsg
	if err := json.Unmarshal([]byte(ev.Data), &m); err != nil {
		t.Fatalf("event data %q: %v", ev.Data, err)
	}
	return ev.Type, m
}

// until reads events until one satisfies ok.
func (s *sseStream) until(t testing.TB, what string, ok func(string, streamMsg) bool) streamMsg {
	t.Helper()
	for range 1000 {
		typ, m := s.next(t)
		if ok(typ, m) {
			return m
		}
	}
	t.Fatalf("no event %s", what)
	return streamMsg{}
}

func isReady(_ string, m streamMsg) bool { return m.Status == "READY" && m.EntryToken != "" }

func (in *instance) setTarget(room string, n int) {
	in.t.Helper()
	if r := do(in.t, "PUT", in.admin+"/admin/rooms/"+room, testAdminToken, map[string]any{"targetActive": n}); r.status != 200 {
		in.t.Fatalf("PUT target: %d %s", r.status, r.raw)
	}
}

func TestSSEStream(t *testing.T) {
	e := newEnv(t)
	in := e.start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	in.enter(user(1), "default")
	in.enter(user(2), "default")
	me := in.enter(user(3), "default")
	s := openSSE(t, in, "default", me.str("queueToken"))
	typ, first := s.next(t)
	if typ != "status" || first.Status != "WAITING" || first.Position != 3 || first.Waiting != 3 {
		t.Fatalf("first event = %s %+v, want status WAITING at 3 of 3", typ, first)
	}
	if d, ok := s.r.Retry(); !ok || d < time.Second || d > 3*time.Second {
		t.Fatalf("retry hint = %v %v, want 1–3 s", d, ok)
	}
	if s.r.LastEventID() == "" {
		t.Fatal("no id on status events")
	}
	in.setTarget("default", 1)
	if m := s.until(t, "at position 2", func(_ string, m streamMsg) bool { return m.Position == 2 }); m.TS == 0 {
		t.Fatalf("pushed status without its publish time: %+v", m)
	}
	in.setTarget("default", 3)
	ready := s.until(t, "READY", isReady)
	if o := in.order(me.str("queueToken"), ready.EntryToken, 1, 1); o.status != 201 {
		t.Fatalf("order with the pushed entry token = %d %s", o.status, o.raw)
	}
}

func TestStreamRefusalsAreJSON(t *testing.T) {
	e := newEnv(t)
	in := e.start(nil)
	qt := in.enter(user(1), "default").str("queueToken")
	do(t, "POST", in.base+"/api/v1/rooms/default/leave", qt, nil)
	cases := []struct {
		name, path, token string
		status            int
		code              string
	}{
		{"no token", "/api/v1/rooms/default/events", "", 401, "unauthorized"},
		{"access token", "/api/v1/rooms/default/events", in.login(user(2)), 401, "unauthorized"},
		{"wrong room", "/api/v1/rooms/other/events", qt, 403, "wrong_room"},
		{"not in queue", "/api/v1/rooms/default/events", qt, 404, "not_in_queue"},
		{"ws without upgrade", "/api/v1/rooms/default/ws", qt, 426, "upgrade_required"},
	}
	for _, tc := range cases {
		r := do(t, "GET", in.base+tc.path, tc.token, nil)
		if r.status != tc.status || r.str("error") != tc.code || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
			t.Errorf("%s: %d %s %s, want %d %s as JSON", tc.name, r.status, r.header.Get("Content-Type"), r.raw, tc.status, tc.code)
		}
	}
	// The token is also accepted as ?token= on stream endpoints (EventSource
	// cannot send headers), and refused the same way.
	if r := do(t, "GET", in.base+"/api/v1/rooms/default/events?token="+qt, "", nil); r.status != 404 {
		t.Errorf("?token= of a departed user = %d", r.status)
	}
}

func dialWS(t testing.TB, in *instance, room, queueToken string) *websocket.Conn {
	t.Helper()
	url := strings.Replace(in.base, "http://", "ws://", 1) + "/api/v1/rooms/" + room + "/ws?token=" + queueToken
	c, res, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		status := 0
		if res != nil {
			status = res.StatusCode
		}
		t.Fatalf("dial ws: %v (status %d)", err, status)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func readWS(t testing.TB, c *websocket.Conn) streamMsg {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, b, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("ws read: %v", err)
	}
	var m streamMsg
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("ws frame %q: %v", b, err)
	}
	return m
}

func TestWebSocketStream(t *testing.T) {
	e := newEnv(t)
	in := e.start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	in.enter(user(1), "default")
	me := in.enter(user(2), "default")
	c := dialWS(t, in, "default", me.str("queueToken"))
	if m := readWS(t, c); m.Type != "status" || m.Status != "WAITING" || m.Position != 2 {
		t.Fatalf("first frame = %+v", m)
	}
	in.setTarget("default", 2)
	var m streamMsg
	for m.Status != "READY" {
		m = readWS(t, c)
	}
	if m.Type != "status" || m.EntryToken == "" {
		t.Fatalf("READY frame = %+v", m)
	}
	// Shutdown closes the socket with 1001 (going away): reconnect elsewhere.
	go in.stop()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, _, err := c.ReadMessage()
		if err == nil {
			continue
		}
		if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
			t.Fatalf("on shutdown: %v, want close 1001", err)
		}
		break
	}
}

// TestStreamsAcrossInstances: streams on instance B follow admissions made
// by instance A's loop; their positions match ZRANK after each step.
func TestStreamsAcrossInstances(t *testing.T) {
	e := newEnv(t)
	a := e.start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	b := e.start(map[string]string{"WR_TARGET_ACTIVE": "0"}) // its own loop ticks once a minute
	const users = 12
	streams := make([]*sseStream, users)
	for i := range users {
		streams[i] = openSSE(t, b, "default", a.enter(user(i+1), "default").str("queueToken"))
		if _, m := streams[i].next(t); m.Position != int64(i+1) {
			t.Fatalf("user%d first position %d", i+1, m.Position)
		}
	}
	ready := 0
	for step, target := range []int{2, 5, 9} {
		a.setTarget("default", target)
		for i := range users {
			if i < ready {
				continue // READY in an earlier step
			}
			if i < target {
				streams[i].until(t, "READY", isReady)
				continue
			}
			want := int64(i + 1 - target)
			streams[i].until(t, "position "+strconv.FormatInt(want, 10), func(_ string, m streamMsg) bool { return m.Position == want })
			if got := zrank(t, e, "default", strconv.Itoa(i+1)); got != want {
				t.Fatalf("step %d: user%d pushed %d, ZRANK+1 = %d", step, i+1, want, got)
			}
		}
		ready = target
	}
}

// zrank is the truth for a user id: 1-based rank, 0 when not waiting.
func zrank(t testing.TB, e *env, room, userID string) int64 {
	t.Helper()
	r, err := e.rdb.ZRank(context.Background(), e.prefix+"{"+room+"}:queue", userID).Result()
	if errors.Is(err, redis.Nil) {
		return 0
	}
	if err != nil {
		t.Fatalf("ZRANK: %v", err)
	}
	return r + 1
}

// TestShutdownWithManyStreams: 1,000 open streams are told to reconnect
// and closed, and the server stops within its shutdown timeout.
func TestShutdownWithManyStreams(t *testing.T) {
	e := newEnv(t)
	// All from one address: more than the cap per address derived from the ceiling.
	in := e.start(map[string]string{"WR_TARGET_ACTIVE": "0", "WR_MAX_CONNS_PER_IP": "2000"})
	const n = 1000
	tokens := token.New(token.Config{Secret: testSecret})
	q := in.parts.Queue
	var wg sync.WaitGroup
	var retried, failed atomic.Int64
	for i := range n {
		st, err := q.Enter(context.Background(), "default", "s"+strconv.Itoa(i))
		if err != nil || st.State != queue.Waiting {
			t.Fatalf("enter: %+v %v", st, err)
		}
		tok, _ := tokens.IssueQueue("s"+strconv.Itoa(i), "default", st.Ticket, time.Hour)
		s := openSSE(t, in, "default", tok)
		if _, m := s.next(t); m.Position != int64(i+1) {
			t.Fatalf("stream %d first position %d", i, m.Position)
		}
		wg.Go(func() {
			reconnect := false
			for {
				ev, err := s.r.Next()
				if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
					if d, ok := s.r.Retry(); reconnect && ok && d > 0 {
						retried.Add(1)
					}
					return
				}
				if err != nil {
					failed.Add(1)
					return
				}
				reconnect = ev.Type == "reconnect"
			}
		})
	}
	start := time.Now()
	in.stop() // fails the test if Serve returns an error (e.g. timed out)
	took := time.Since(start)
	wg.Wait()
	if retried.Load() != n || failed.Load() != 0 {
		t.Fatalf("%d of %d streams ended with a retry hint, %d failed", retried.Load(), n, failed.Load())
	}
	t.Logf("shutdown with %d streams took %v", n, took)
}

// TestClosedSSEClientIsNoticed: a client that goes away is noticed within
// seconds (not after several heartbeats), and its stream is released.
func TestClosedSSEClientIsNoticed(t *testing.T) {
	longScenario(t)
	e := newEnv(t)
	in := e.start(map[string]string{"WR_TARGET_ACTIVE": "0"})
	s := openSSE(t, in, "default", in.enter(user(1), "default").str("queueToken"))
	s.next(t)
	if got := in.metric("waitingroom_stream_connections"); got != 1 {
		t.Fatalf("stream gauge = %v, want 1", got)
	}
	s.res.Body.Close()
	streamClient.CloseIdleConnections()
	waitFor(t, "the server to release the closed stream", func() bool {
		return in.metric("waitingroom_stream_connections") == 0 && in.parts.Hub.Connections() == 0
	})
}

func TestDisabledTransportIs503(t *testing.T) {
	e := newEnv(t)
	in := e.start(map[string]string{"WR_TRANSPORTS": "ws"})
	qt := in.enter(user(1), "default").str("queueToken")
	if r := do(t, "GET", in.base+"/api/v1/rooms/default/events", qt, nil); r.status != 503 || r.str("error") != "unavailable" {
		t.Fatalf("SSE while off = %d %s", r.status, r.raw)
	}
	dialWS(t, in, "default", qt) // the other transport still works
	if p := in.position("default", qt); p.status != 200 {
		t.Fatalf("polling = %d", p.status)
	}
}

// TestShutdownIgnoresUnusedConnections: connections opened ahead of need
// that never sent a byte do not hold up a shutdown, on either port: browsers
// open them to the public one, and HTTP clients with requests in parallel
// to the management one (a connection dialled for a request that another
// connection served first is kept, unused).
func TestShutdownIgnoresUnusedConnections(t *testing.T) {
	e := newEnv(t)
	in := e.start(map[string]string{"WR_SHUTDOWN_TIMEOUT": "3s"})
	for _, base := range []string{in.base, in.admin} {
		for range 5 {
			c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
		}
	}
	in.stop() // fails the test if Serve reports a timed-out shutdown
}

// TestAbandonedUsersLeaveTheQueue: a waiting user who neither polls nor
// holds a stream for WR_IDLE_TIMEOUT is removed and counted; pollers and
// stream holders stay, and the positions pushed to those behind follow.
func TestAbandonedUsersLeaveTheQueue(t *testing.T) {
	longScenario(t)
	e := newEnv(t)
	// The one band gives a grace of 2.5 s (presence.Grace): user1 is removed
	// 5 s after it ran out.
	in := e.start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0", "WR_IDLE_TIMEOUT": "5s", "WR_POLL_BANDS": "*:500ms"})
	in.enter(user(1), "default") // never seen again
	poller := in.enter(user(2), "default").str("queueToken")
	streamer := openSSE(t, in, "default", in.enter(user(3), "default").str("queueToken"))
	behind := openSSE(t, in, "default", in.enter(user(4), "default").str("queueToken"))
	streamer.next(t)
	if _, m := behind.next(t); m.Position != 4 {
		t.Fatalf("behind starts at %d", m.Position)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
				in.position("default", poller)
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()
	behind.until(t, "position 3 once user1 is removed", func(_ string, m streamMsg) bool { return m.Position == 3 })
	if got := zrank(t, e, "default", "4"); got != 3 {
		t.Fatalf("ZRANK+1 of user4 = %d, want 3", got)
	}
	r := in.adminRoom("default")
	if r.num("abandoned") != 1 || r.num("waiting") != 3 {
		t.Fatalf("room = %s, want 1 abandoned and 3 waiting", r.raw)
	}
	if got := zrank(t, e, "default", "2"); got != 1 {
		t.Fatalf("the poller was removed or moved: ZRANK+1 %d", got)
	}
	if got := zrank(t, e, "default", "3"); got != 2 {
		t.Fatalf("the stream holder was removed or moved: ZRANK+1 %d", got)
	}
}
