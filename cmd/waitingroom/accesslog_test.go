package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"waitingroom/server/accesslog"
	"waitingroom/server/token"
	"waitingroom/stream/sseclient"
)

// logLines parses an instance's JSON log (WR_LOG_FORMAT=json).
func logLines(t testing.TB, in *instance) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(in.logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a log line is not JSON: %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// accessLine is the access line of the request with id, or nil.
func accessLine(t testing.TB, in *instance, id string) map[string]any {
	t.Helper()
	for _, m := range logLines(t, in) {
		if m["msg"] == "access" && m["request_id"] == id {
			return m
		}
	}
	return nil
}

// TestAccessLogLine: one JSON line per refused request with its method,
// route pattern, status, bytes, duration, address, request id and user
// (when the token named one) — and never the query string's token or the
// Authorization header's, not even in the other lines. A success is not
// logged in the default mode.
func TestAccessLogLine(t *testing.T) {
	e := newEnv(t)
	in := e.start(map[string]string{"WR_LOG_FORMAT": "json"})
	const secret = "s3cr3t-token-qq7"
	r := do(t, "GET", in.base+"/api/v1/rooms/default/position?token="+secret, secret, nil)
	if r.status != 401 {
		t.Fatalf("position with a bad token = %d %s", r.status, r.raw)
	}
	qt := in.enter(user(2), "default").str("queueToken")
	wrong := do(t, "GET", in.base+"/api/v1/rooms/other/position", qt, nil)
	unknown := do(t, "GET", in.base+"/no/such/path?token="+secret, "", nil, "Cookie", "wr_queue="+secret)
	ok := do(t, "GET", in.base+"/api/v1/rooms/default/position", qt, nil)
	if wrong.status != 403 || unknown.status != 404 || ok.status != 200 {
		t.Fatalf("statuses = %d %d %d, want 403 404 200", wrong.status, unknown.status, ok.status)
	}

	line := accessLine(t, in, r.header.Get("X-Request-Id"))
	if line == nil {
		t.Fatalf("no access line for the 401:\n%s", in.logs)
	}
	want := map[string]any{"level": "INFO", "method": "GET", "route": "/api/v1/rooms/:room/position", "status": 401.0,
		"bytes": float64(len(r.raw)), "address": "127.0.0.1"}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("%s = %v, want %v (line %v)", k, line[k], v, line)
		}
	}
	if d, ok := line["duration_ms"].(float64); !ok || d < 0 {
		t.Errorf("duration_ms = %v", line["duration_ms"])
	}
	if _, ok := line["user"]; ok {
		t.Errorf("a refused token named a user: %v", line)
	}
	if l := accessLine(t, in, wrong.header.Get("X-Request-Id")); l == nil || l["user"] != "2" || l["status"] != 403.0 {
		t.Errorf("wrong room's line = %v, want user 2, status 403", l)
	}
	if l := accessLine(t, in, unknown.header.Get("X-Request-Id")); l == nil || l["route"] != "unmatched" {
		t.Errorf("unknown path's line = %v, want route unmatched", l)
	}
	if l := accessLine(t, in, ok.header.Get("X-Request-Id")); l != nil {
		t.Errorf("a 200 was logged with WR_ACCESS_LOG=errors: %v", l)
	}
	for _, leak := range []string{secret, "token=", "/no/such/path", qt} {
		if strings.Contains(in.logs.String(), leak) {
			t.Errorf("the log holds %q:\n%s", leak, in.logs)
		}
	}
}

// TestAccessLogAll: with WR_ACCESS_LOG=all a success has its line on
// either port, but for the management port's scrapes and probes (/healthz,
// /readyz, /metrics), which never do.
func TestAccessLogAll(t *testing.T) {
	e := newEnv(t)
	in := e.start(map[string]string{"WR_LOG_FORMAT": "json", "WR_ACCESS_LOG": "all"})
	ok := do(t, "GET", in.base+"/api/v1/products/1", "", nil)
	health := do(t, "GET", in.admin+"/healthz", "", nil)
	refused := do(t, "GET", in.admin+"/admin/rooms/default", "", nil)
	rooms := do(t, "GET", in.admin+"/admin/rooms", testAdminToken, nil)
	if ok.status != 200 || health.status != 200 || refused.status != 401 || rooms.status != 200 {
		t.Fatalf("statuses = %d %d %d %d, want 200 200 401 200", ok.status, health.status, refused.status, rooms.status)
	}
	if l := accessLine(t, in, rooms.header.Get("X-Request-Id")); l == nil || l["status"] != 200.0 {
		t.Errorf("an admin GET /admin/rooms wrote %v, want its line", l)
	}
	if l := accessLine(t, in, ok.header.Get("X-Request-Id")); l == nil || l["route"] != "/api/v1/products/:id" || l["status"] != 200.0 {
		t.Errorf("the product's line = %v", l)
	}
	if l := accessLine(t, in, health.header.Get("X-Request-Id")); l != nil {
		t.Errorf("the management port logged a 200: %v", l)
	}
	if l := accessLine(t, in, refused.header.Get("X-Request-Id")); l == nil || l["route"] != "/admin" || l["status"] != 401.0 {
		t.Errorf("the management port's 401 line = %v", l)
	}
}

// TestAccessLogBudget: a flood of refused requests writes at most the
// budget's lines a second (then a line counting the rest), while a 5xx
// during the flood is logged, with its request id, at WARN.
func TestAccessLogBudget(t *testing.T) {
	e := newEnv(t)
	in := e.start(map[string]string{"WR_LOG_FORMAT": "json", "WR_TRANSPORTS": "none"})
	const flood, workers = 4000, 8
	start := time.Now()
	var wg sync.WaitGroup
	var failed5xx response
	for w := range workers {
		wg.Go(func() {
			for i := range flood / workers {
				if w == 0 && i == flood/workers/2 {
					failed5xx = do(t, "GET", in.base+"/api/v1/rooms/default/events", "", nil) // transport off: 503
				}
				if r := do(t, "GET", in.base+"/api/v1/rooms/default/position", "", nil); r.status != 401 {
					t.Errorf("flood request = %d", r.status)
					return
				}
			}
		})
	}
	wg.Wait()
	// The bound is per second of flood: however long this machine took.
	windows := int(time.Since(start)/time.Second) + 2
	if failed5xx.status != 503 {
		t.Fatalf("events with SSE off = %d, want 503", failed5xx.status)
	}
	var lines401 int
	for _, m := range logLines(t, in) {
		if m["msg"] == "access" && m["status"] == 401.0 {
			lines401++
		}
	}
	if limit := windows * accesslog.PerSecondRefused; lines401 > limit || lines401 == 0 {
		t.Errorf("%d access lines for %d refusals, want 1 to %d (%d windows)", lines401, flood, limit, windows)
	}
	id := failed5xx.header.Get("X-Request-Id")
	l := accessLine(t, in, id)
	if l == nil || l["level"] != "WARN" || l["status"] != 503.0 || l["route"] != "/api/v1/rooms/:room/events" {
		t.Errorf("the 5xx's access line = %v", l)
	}
	found := false
	for _, m := range logLines(t, in) {
		found = found || m["msg"] == "request failed" && m["request_id"] == id && m["level"] == "WARN"
	}
	if !found {
		t.Error("the 5xx has no WARN line with its cause and request id")
	}
	// The suppressed lines are counted by the next line of that status
	// once its second is over.
	waitFor(t, "a summary of the suppressed lines", func() bool {
		do(t, "GET", in.base+"/api/v1/rooms/default/position", "", nil)
		return strings.Contains(in.logs.String(), `"msg":"access lines suppressed"`)
	})
}

// TestLogLevels: WR_LOG_LEVEL=warn keeps INFO lines (the start, the
// access lines of 4xx) out; a 5xx still has its lines.
func TestLogLevels(t *testing.T) {
	e := newEnv(t)
	in := e.start(map[string]string{"WR_LOG_FORMAT": "json", "WR_LOG_LEVEL": "warn", "WR_TRANSPORTS": "none"})
	do(t, "GET", in.base+"/api/v1/rooms/default/position", "", nil)
	r := do(t, "GET", in.base+"/api/v1/rooms/default/events", "", nil)
	if r.status != 503 {
		t.Fatalf("events with SSE off = %d", r.status)
	}
	if l := accessLine(t, in, r.header.Get("X-Request-Id")); l == nil {
		t.Errorf("no access line for the 503 at warn:\n%s", in.logs)
	}
	for _, m := range logLines(t, in) {
		if m["level"] == "INFO" || m["level"] == "DEBUG" {
			t.Errorf("logged below warn: %v", m)
		}
	}
}

// TestLogConfig: bad log settings are refused naming the variable; the
// defaults are info, errors, and a format chosen at start.
func TestLogConfig(t *testing.T) {
	for key, value := range map[string]string{"WR_LOG_LEVEL": "loud", "WR_LOG_FORMAT": "xml", "WR_ACCESS_LOG": "some"} {
		_, err := LoadConfig(envOf(map[string]string{"WR_JWT_SECRET": testSecret, key: value}))
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Var != key {
			t.Errorf("%s=%s: err = %v, want a ConfigError naming it", key, value, err)
		}
	}
	c, err := LoadConfig(envOf(map[string]string{"WR_JWT_SECRET": testSecret}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Log.Level.String() != "INFO" || c.Log.Format != "" || c.AccessLog != accesslog.Errors {
		t.Fatalf("log defaults = %+v, access log %v", c.Log, c.AccessLog)
	}
}

// TestBadLogSettingStopsTheCommand: the command refuses a bad log setting
// before anything else, naming it — in JSON, as stderr is no terminal.
func TestBadLogSettingStopsTheCommand(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{"WR_TEST_MAIN=1", "WR_TEST_ARGS=help", "WR_LOG_LEVEL=loud", "PATH=" + os.Getenv("PATH")}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit = %v, want 1", err)
	}
	var line map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(stderr.Bytes()), &line); err != nil {
		t.Fatalf("stderr is not one JSON line: %q", stderr.String())
	}
	if msg, _ := line["msg"].(string); line["level"] != "ERROR" || !strings.Contains(msg, "WR_LOG_LEVEL") {
		t.Fatalf("stderr = %v, want an ERROR naming WR_LOG_LEVEL", line)
	}
}

// TestSSEIdsGrowAcrossReconnects: a stream reconnected with the last id
// it saw (as EventSource does) goes on with a greater id, and the ids
// follow the room's event number as the room moves.
func TestSSEIdsGrowAcrossReconnects(t *testing.T) {
	e := newEnv(t)
	in := e.start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	in.enter(user(1), "default")
	me := in.enter(user(2), "default").str("queueToken")
	first := openSSEFrom(t, in, me, "")
	id1 := first.nextID(t)
	in.setTarget("default", 1) // user1 admitted: the room's event number moves
	first.untilPosition(t, 1)
	id2 := first.r.LastEventID()
	if !(parseID(t, id2) > parseID(t, id1)) {
		t.Fatalf("ids along a stream: %s then %s", id1, id2)
	}
	first.res.Body.Close()

	second := openSSEFrom(t, in, me, id2)
	if id3 := second.nextID(t); !(parseID(t, id3) > parseID(t, id2)) {
		t.Fatalf("reconnected with Last-Event-ID %s, got id %s: want a greater one", id2, id3)
	}
	second.res.Body.Close()
	// A client's made-up id cannot push the stream past what JavaScript
	// holds, nor break it.
	for _, bad := range []string{"99999999999999999999", "-5", "x"} {
		s := openSSEFrom(t, in, me, bad)
		if id := parseID(t, s.nextID(t)); id <= 0 || id >= 1<<53 {
			t.Errorf("Last-Event-ID %q: id %d", bad, id)
		}
		s.res.Body.Close()
	}
}

// openSSEFrom opens a stream sending lastID as Last-Event-ID ("": none).
func openSSEFrom(t testing.TB, in *instance, queueToken, lastID string) *sseStream {
	t.Helper()
	req, _ := http.NewRequest("GET", in.base+"/api/v1/rooms/default/events", nil)
	req.Header.Set("Authorization", "Bearer "+queueToken)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := streamClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 {
		res.Body.Close()
		t.Fatalf("events = %d", res.StatusCode)
	}
	t.Cleanup(func() { res.Body.Close() })
	return &sseStream{res: res, r: sseclient.NewReader(bufio.NewReaderSize(res.Body, 4096))}
}

// nextID reads the next status event and returns its id.
func (s *sseStream) nextID(t testing.TB) string {
	t.Helper()
	for {
		ev, err := s.r.Next()
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		if ev.Type == "status" {
			return ev.ID
		}
	}
}

func (s *sseStream) untilPosition(t testing.TB, pos int64) {
	t.Helper()
	s.until(t, fmt.Sprintf("at position %d", pos), func(_ string, m streamMsg) bool { return m.Position == pos })
}

func parseID(t testing.TB, id string) int64 {
	t.Helper()
	var n int64
	if _, err := fmt.Sscan(id, &n); err != nil {
		t.Fatalf("event id %q is not a number", id)
	}
	return n
}

// TestGatewayAccessLog: in gateway mode an origin request's line names
// the protected route's pattern, or "origin"; the origin's failure is a
// WARN line with the request id.
func TestGatewayAccessLog(t *testing.T) {
	o := startOrigin(t)
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + l.Addr().String()
	l.Close()
	in := gatewayInstance(t, o, map[string]string{"WR_UPSTREAM": dead, "WR_LOG_FORMAT": "json"})
	c := visitor(t)
	code, h, _ := call(t, c, "GET", in.base+"/some/page?token=x", "")
	code2, h2, _ := call(t, c, "POST", in.base+"/checkout/pay", `{}`, "Accept", "application/json")
	if code != 502 || code2 != 403 {
		t.Fatalf("statuses = %d %d, want 502 403", code, code2)
	}
	id := h.Get("X-Request-Id")
	if l := accessLine(t, in, id); l == nil || l["route"] != "origin" || l["status"] != 502.0 || l["level"] != "WARN" {
		t.Errorf("the unprotected request's line = %v", l)
	}
	if l := accessLine(t, in, h2.Get("X-Request-Id")); l == nil || l["route"] != "/checkout/*" || l["status"] != 403.0 {
		t.Errorf("the protected request's line = %v", l)
	}
	found := false
	for _, m := range logLines(t, in) {
		found = found || m["msg"] == "gateway: origin failed" && m["request_id"] == id && m["level"] == "WARN"
	}
	if !found {
		t.Errorf("no WARN line for the origin's failure with its request id:\n%s", in.logs)
	}
}

// BenchmarkAccessLog is the poll path from the hub's memory through the
// whole public handler (protocol filter, Fiber, the access log's check)
// with the access log off and in its default mode: a 200 costs the
// default mode a status comparison.
func BenchmarkAccessLog(b *testing.B) {
	for _, mode := range []string{"off", "errors"} {
		b.Run(mode, func(b *testing.B) {
			e := newEnv(b)
			in := e.start(map[string]string{"WR_TARGET_ACTIVE": "0", "WR_ACCESS_LOG": mode, "WR_LOG_LEVEL": "info"})
			q := in.parts.Queue
			var ticket int64
			for i := range 150 {
				st, err := q.Enter(context.Background(), "default", strconv.Itoa(i+1))
				if err != nil {
					b.Fatal(err)
				}
				ticket = st.Ticket
			}
			tok, _ := token.New(token.Config{Secret: testSecret}).IssueQueue("150", "default", ticket, time.Hour)
			benchHandler(b, in.srv.Public().Server().Handler, "/api/v1/rooms/default/position", tok, 200)
		})
	}
}
