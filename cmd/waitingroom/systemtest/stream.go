package systemtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/redis/go-redis/v9"

	"waitingroom/stream/sseclient"
)

// StreamMsg is one decoded push message.
type StreamMsg struct {
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

// SSEStream is an open SSE stream parsed by the WHATWG-conformant reader.
type SSEStream struct {
	Res *http.Response
	R   *sseclient.Reader
}

func OpenSSE(t testing.TB, in *Instance, room, queueToken string) *SSEStream {
	t.Helper()
	req, _ := http.NewRequest("GET", in.Base+"/api/v1/rooms/"+room+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+queueToken)
	res, err := StreamClient.Do(req)
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
	s := &SSEStream{Res: res, R: sseclient.NewReader(bufio.NewReaderSize(res.Body, 4096))}
	t.Cleanup(func() { res.Body.Close() })
	return s
}

// StreamClient has no overall timeout: streams stay open. Its
// connections are read once asked on (askingTransport) and not kept idle.
var StreamClient = &http.Client{Transport: func() *http.Transport {
	tr := askingTransport(&net.Dialer{})
	tr.MaxIdleConnsPerHost = -1
	return tr
}()}

// Next returns the next event as a message, with its SSE event type.
func (s *SSEStream) Next(t testing.TB) (string, StreamMsg) {
	t.Helper()
	ev, err := s.R.Next()
	if err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	var m StreamMsg
	if err := json.Unmarshal([]byte(ev.Data), &m); err != nil {
		t.Fatalf("event data %q: %v", ev.Data, err)
	}
	return ev.Type, m
}

// Until reads events until one satisfies ok.
func (s *SSEStream) Until(t testing.TB, what string, ok func(string, StreamMsg) bool) StreamMsg {
	t.Helper()
	for range 1000 {
		typ, m := s.Next(t)
		if ok(typ, m) {
			return m
		}
	}
	t.Fatalf("no event %s", what)
	return StreamMsg{}
}

func IsReady(_ string, m StreamMsg) bool { return m.Status == "READY" && m.EntryToken != "" }

func (in *Instance) SetTarget(room string, n int) {
	in.t.Helper()
	if r := Do(in.t, "PUT", in.Admin+"/admin/rooms/"+room, TestAdminToken, map[string]any{"targetActive": n}); r.Status != 200 {
		in.t.Fatalf("PUT target: %d %s", r.Status, r.Raw)
	}
}

func DialWS(t testing.TB, in *Instance, room, queueToken string) *websocket.Conn {
	t.Helper()
	url := strings.Replace(in.Base, "http://", "ws://", 1) + "/api/v1/rooms/" + room + "/ws?token=" + queueToken
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

func ReadWS(t testing.TB, c *websocket.Conn) StreamMsg {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, b, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("ws read: %v", err)
	}
	var m StreamMsg
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("ws frame %q: %v", b, err)
	}
	return m
}

// Zrank is the truth for a user id: 1-based rank, 0 when not waiting.
func Zrank(t testing.TB, e *Env, room, userID string) int64 {
	t.Helper()
	r, err := e.Redis.ZRank(context.Background(), e.Prefix+"{"+room+"}:queue", userID).Result()
	if errors.Is(err, redis.Nil) {
		return 0
	}
	if err != nil {
		t.Fatalf("ZRANK: %v", err)
	}
	return r + 1
}
