package flow

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/queue"
	"waitingroom/server/token"
)

func TestSSEStream(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	in.Enter(systemtest.User(1), "default")
	in.Enter(systemtest.User(2), "default")
	me := in.Enter(systemtest.User(3), "default")
	s := systemtest.OpenSSE(t, in, "default", me.Str("queueToken"))
	typ, first := s.Next(t)
	if typ != "status" || first.Status != "WAITING" || first.Position != 3 || first.Waiting != 3 {
		t.Fatalf("first event = %s %+v, want status WAITING at 3 of 3", typ, first)
	}
	if d, ok := s.R.Retry(); !ok || d < time.Second || d > 3*time.Second {
		t.Fatalf("retry hint = %v %v, want 1–3 s", d, ok)
	}
	if s.R.LastEventID() == "" {
		t.Fatal("no id on status events")
	}
	in.SetTarget("default", 1)
	if m := s.Until(t, "at position 2", func(_ string, m systemtest.StreamMsg) bool { return m.Position == 2 }); m.TS == 0 {
		t.Fatalf("pushed status without its publish time: %+v", m)
	}
	in.SetTarget("default", 3)
	ready := s.Until(t, "READY", systemtest.IsReady)
	if o := in.Order(me.Str("queueToken"), ready.EntryToken, 1, 1); o.Status != 201 {
		t.Fatalf("order with the pushed entry token = %d %s", o.Status, o.Raw)
	}
}

func TestStreamRefusalsAreJSON(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(nil)
	qt := in.Enter(systemtest.User(1), "default").Str("queueToken")
	systemtest.Do(t, "POST", in.Base+"/api/v1/rooms/default/leave", qt, nil)
	cases := []struct {
		name, path, token string
		status            int
		code              string
	}{
		{"no token", "/api/v1/rooms/default/events", "", 401, "unauthorized"},
		{"access token", "/api/v1/rooms/default/events", in.Login(systemtest.User(2)), 401, "unauthorized"},
		{"wrong room", "/api/v1/rooms/other/events", qt, 403, "wrong_room"},
		{"not in queue", "/api/v1/rooms/default/events", qt, 404, "not_in_queue"},
		{"ws without upgrade", "/api/v1/rooms/default/ws", qt, 426, "upgrade_required"},
	}
	for _, tc := range cases {
		r := systemtest.Do(t, "GET", in.Base+tc.path, tc.token, nil)
		if r.Status != tc.status || r.Str("error") != tc.code || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			t.Errorf("%s: %d %s %s, want %d %s as JSON", tc.name, r.Status, r.Header.Get("Content-Type"), r.Raw, tc.status, tc.code)
		}
	}
	// The token is also accepted as ?token= on stream endpoints (EventSource
	// cannot send headers), and refused the same way.
	if r := systemtest.Do(t, "GET", in.Base+"/api/v1/rooms/default/events?token="+qt, "", nil); r.Status != 404 {
		t.Errorf("?token= of a departed user = %d", r.Status)
	}
}

func TestWebSocketStream(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	in.Enter(systemtest.User(1), "default")
	me := in.Enter(systemtest.User(2), "default")
	c := systemtest.DialWS(t, in, "default", me.Str("queueToken"))
	if m := systemtest.ReadWS(t, c); m.Type != "status" || m.Status != "WAITING" || m.Position != 2 {
		t.Fatalf("first frame = %+v", m)
	}
	in.SetTarget("default", 2)
	var m systemtest.StreamMsg
	for m.Status != "READY" {
		m = systemtest.ReadWS(t, c)
	}
	if m.Type != "status" || m.EntryToken == "" {
		t.Fatalf("READY frame = %+v", m)
	}
	// Shutdown closes the socket with 1001 (going away): reconnect elsewhere.
	go in.Stop()
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
	e := systemtest.NewEnv(t)
	a := e.Start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	b := e.Start(map[string]string{"WR_TARGET_ACTIVE": "0"}) // its own loop ticks once a minute
	const users = 12
	streams := make([]*systemtest.SSEStream, users)
	for i := range users {
		streams[i] = systemtest.OpenSSE(t, b, "default", a.Enter(systemtest.User(i+1), "default").Str("queueToken"))
		if _, m := streams[i].Next(t); m.Position != int64(i+1) {
			t.Fatalf("user%d first position %d", i+1, m.Position)
		}
	}
	ready := 0
	for step, target := range []int{2, 5, 9} {
		a.SetTarget("default", target)
		for i := range users {
			if i < ready {
				continue // READY in an earlier step
			}
			if i < target {
				streams[i].Until(t, "READY", systemtest.IsReady)
				continue
			}
			want := int64(i + 1 - target)
			streams[i].Until(t, "position "+strconv.FormatInt(want, 10), func(_ string, m systemtest.StreamMsg) bool { return m.Position == want })
			if got := systemtest.Zrank(t, e, "default", strconv.Itoa(i+1)); got != want {
				t.Fatalf("step %d: user%d pushed %d, ZRANK+1 = %d", step, i+1, want, got)
			}
		}
		ready = target
	}
}

// TestShutdownWithManyStreams: 1,000 open streams are told to reconnect
// and closed, and the server stops within its shutdown timeout.
func TestShutdownWithManyStreams(t *testing.T) {
	e := systemtest.NewEnv(t)
	// All from one address: more than the cap per address derived from the ceiling.
	in := e.Start(map[string]string{"WR_TARGET_ACTIVE": "0", "WR_MAX_CONNS_PER_IP": "2000"})
	const n = 1000
	tokens := token.New(token.Config{Secret: systemtest.TestSecret})
	q := in.Parts.Queue
	var wg sync.WaitGroup
	var retried, failed atomic.Int64
	for i := range n {
		st, err := q.Enter(context.Background(), "default", "s"+strconv.Itoa(i))
		if err != nil || st.State != queue.Waiting {
			t.Fatalf("enter: %+v %v", st, err)
		}
		tok, _ := tokens.IssueQueue("s"+strconv.Itoa(i), "default", st.Ticket, time.Hour)
		s := systemtest.OpenSSE(t, in, "default", tok)
		if _, m := s.Next(t); m.Position != int64(i+1) {
			t.Fatalf("stream %d first position %d", i, m.Position)
		}
		wg.Go(func() {
			reconnect := false
			for {
				ev, err := s.R.Next()
				if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
					if d, ok := s.R.Retry(); reconnect && ok && d > 0 {
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
	in.Stop() // fails the test if Serve returns an error (e.g. timed out)
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
	systemtest.LongScenario(t)
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_TARGET_ACTIVE": "0"})
	s := systemtest.OpenSSE(t, in, "default", in.Enter(systemtest.User(1), "default").Str("queueToken"))
	s.Next(t)
	if got := in.Metric("waitingroom_stream_connections"); got != 1 {
		t.Fatalf("stream gauge = %v, want 1", got)
	}
	s.Res.Body.Close()
	systemtest.StreamClient.CloseIdleConnections()
	systemtest.WaitFor(t, "the server to release the closed stream", func() bool {
		return in.Metric("waitingroom_stream_connections") == 0 && in.Parts.Hub.Connections() == 0
	})
}

func TestDisabledTransportIs503(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_TRANSPORTS": "ws"})
	qt := in.Enter(systemtest.User(1), "default").Str("queueToken")
	if r := systemtest.Do(t, "GET", in.Base+"/api/v1/rooms/default/events", qt, nil); r.Status != 503 || r.Str("error") != "unavailable" {
		t.Fatalf("SSE while off = %d %s", r.Status, r.Raw)
	}
	systemtest.DialWS(t, in, "default", qt) // the other transport still works
	if p := in.Position("default", qt); p.Status != 200 {
		t.Fatalf("polling = %d", p.Status)
	}
}

// TestShutdownIgnoresUnusedConnections: connections opened ahead of need
// that never sent a byte do not hold up a shutdown, on either port: browsers
// open them to the public one, and HTTP clients with requests in parallel
// to the management one (a connection dialled for a request that another
// connection served first is kept, unused).
func TestShutdownIgnoresUnusedConnections(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_SHUTDOWN_TIMEOUT": "3s"})
	for _, base := range []string{in.Base, in.Admin} {
		for range 5 {
			c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
		}
	}
	in.Stop() // fails the test if Serve reports a timed-out shutdown
}

// TestAbandonedUsersLeaveTheQueue: a waiting user who neither polls nor
// holds a stream for WR_IDLE_TIMEOUT is removed and counted; pollers and
// stream holders stay, and the positions pushed to those behind follow.
func TestAbandonedUsersLeaveTheQueue(t *testing.T) {
	systemtest.LongScenario(t)
	e := systemtest.NewEnv(t)
	// The one band gives a grace of 2.5 s (presence.Grace): user1 is removed
	// 5 s after it ran out.
	in := e.Start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0", "WR_IDLE_TIMEOUT": "5s", "WR_POLL_BANDS": "*:500ms"})
	in.Enter(systemtest.User(1), "default") // never seen again
	poller := in.Enter(systemtest.User(2), "default").Str("queueToken")
	streamer := systemtest.OpenSSE(t, in, "default", in.Enter(systemtest.User(3), "default").Str("queueToken"))
	behind := systemtest.OpenSSE(t, in, "default", in.Enter(systemtest.User(4), "default").Str("queueToken"))
	streamer.Next(t)
	if _, m := behind.Next(t); m.Position != 4 {
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
				in.Position("default", poller)
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()
	behind.Until(t, "position 3 once user1 is removed", func(_ string, m systemtest.StreamMsg) bool { return m.Position == 3 })
	if got := systemtest.Zrank(t, e, "default", "4"); got != 3 {
		t.Fatalf("ZRANK+1 of user4 = %d, want 3", got)
	}
	r := in.AdminRoom("default")
	if r.Num("abandoned") != 1 || r.Num("waiting") != 3 {
		t.Fatalf("room = %s, want 1 abandoned and 3 waiting", r.Raw)
	}
	if got := systemtest.Zrank(t, e, "default", "2"); got != 1 {
		t.Fatalf("the poller was removed or moved: ZRANK+1 %d", got)
	}
	if got := systemtest.Zrank(t, e, "default", "3"); got != 2 {
		t.Fatalf("the stream holder was removed or moved: ZRANK+1 %d", got)
	}
}
