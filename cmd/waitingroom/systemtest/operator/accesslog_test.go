package operator

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"waitingroom/cmd/waitingroom/compose"
	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/accesslog"
	"waitingroom/server/token"
	"waitingroom/stream/sseclient"
)

// TestAccessLogLine: one JSON line per refused request with its method,
// route pattern, status, bytes, duration, address, request id and user
// (when the token named one) — and never the query string's token or the
// Authorization header's, not even in the other lines. A success is not
// logged in the default mode.
func TestAccessLogLine(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_LOG_FORMAT": "json"})
	const secret = "s3cr3t-token-qq7"
	r := systemtest.Do(t, "GET", in.Base+"/api/v1/rooms/default/position?token="+secret, secret, nil)
	if r.Status != 401 {
		t.Fatalf("position with a bad token = %d %s", r.Status, r.Raw)
	}
	qt := in.Enter(systemtest.User(2), "default").Str("queueToken")
	wrong := systemtest.Do(t, "GET", in.Base+"/api/v1/rooms/other/position", qt, nil)
	unknown := systemtest.Do(t, "GET", in.Base+"/no/such/path?token="+secret, "", nil, "Cookie", "wr_queue="+secret)
	ok := systemtest.Do(t, "GET", in.Base+"/api/v1/rooms/default/position", qt, nil)
	if wrong.Status != 403 || unknown.Status != 404 || ok.Status != 200 {
		t.Fatalf("statuses = %d %d %d, want 403 404 200", wrong.Status, unknown.Status, ok.Status)
	}

	line := systemtest.AccessLine(t, in, r.Header.Get("X-Request-Id"))
	if line == nil {
		t.Fatalf("no access line for the 401:\n%s", in.Logs)
	}
	want := map[string]any{"level": "INFO", "method": "GET", "route": "/api/v1/rooms/:room/position", "status": 401.0,
		"bytes": float64(len(r.Raw)), "address": "127.0.0.1"}
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
	if l := systemtest.AccessLine(t, in, wrong.Header.Get("X-Request-Id")); l == nil || l["user"] != "2" || l["status"] != 403.0 {
		t.Errorf("wrong room's line = %v, want user 2, status 403", l)
	}
	if l := systemtest.AccessLine(t, in, unknown.Header.Get("X-Request-Id")); l == nil || l["route"] != "unmatched" {
		t.Errorf("unknown path's line = %v, want route unmatched", l)
	}
	if l := systemtest.AccessLine(t, in, ok.Header.Get("X-Request-Id")); l != nil {
		t.Errorf("a 200 was logged with WR_ACCESS_LOG=errors: %v", l)
	}
	for _, leak := range []string{secret, "token=", "/no/such/path", qt} {
		if strings.Contains(in.Logs.String(), leak) {
			t.Errorf("the log holds %q:\n%s", leak, in.Logs)
		}
	}
}

// TestAccessLogAll: with WR_ACCESS_LOG=all a success has its line on
// either port, but for the management port's scrapes and probes (/healthz,
// /readyz, /metrics), which never do.
func TestAccessLogAll(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_LOG_FORMAT": "json", "WR_ACCESS_LOG": "all"})
	ok := systemtest.Do(t, "GET", in.Base+"/api/v1/products/1", "", nil)
	health := systemtest.Do(t, "GET", in.Admin+"/healthz", "", nil)
	refused := systemtest.Do(t, "GET", in.Admin+"/admin/rooms/default", "", nil)
	rooms := systemtest.Do(t, "GET", in.Admin+"/admin/rooms", systemtest.TestAdminToken, nil)
	if ok.Status != 200 || health.Status != 200 || refused.Status != 401 || rooms.Status != 200 {
		t.Fatalf("statuses = %d %d %d %d, want 200 200 401 200", ok.Status, health.Status, refused.Status, rooms.Status)
	}
	if l := systemtest.AccessLine(t, in, rooms.Header.Get("X-Request-Id")); l == nil || l["status"] != 200.0 {
		t.Errorf("an admin GET /admin/rooms wrote %v, want its line", l)
	}
	if l := systemtest.AccessLine(t, in, ok.Header.Get("X-Request-Id")); l == nil || l["route"] != "/api/v1/products/:id" || l["status"] != 200.0 {
		t.Errorf("the product's line = %v", l)
	}
	if l := systemtest.AccessLine(t, in, health.Header.Get("X-Request-Id")); l != nil {
		t.Errorf("the management port logged a 200: %v", l)
	}
	if l := systemtest.AccessLine(t, in, refused.Header.Get("X-Request-Id")); l == nil || l["route"] != "/admin" || l["status"] != 401.0 {
		t.Errorf("the management port's 401 line = %v", l)
	}
}

// TestAccessLogBudget: a flood of refused requests writes at most the
// budget's lines a second (then a line counting the rest), while a 5xx
// during the flood is logged, with its request id, at WARN.
func TestAccessLogBudget(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_LOG_FORMAT": "json", "WR_TRANSPORTS": "none"})
	const flood, workers = 4000, 8
	start := time.Now()
	var wg sync.WaitGroup
	var failed5xx systemtest.Response
	for w := range workers {
		wg.Go(func() {
			for i := range flood / workers {
				if w == 0 && i == flood/workers/2 {
					failed5xx = systemtest.Do(t, "GET", in.Base+"/api/v1/rooms/default/events", "", nil) // transport off: 503
				}
				if r := systemtest.Do(t, "GET", in.Base+"/api/v1/rooms/default/position", "", nil); r.Status != 401 {
					t.Errorf("flood request = %d", r.Status)
					return
				}
			}
		})
	}
	wg.Wait()
	// The bound is per second of flood: however long this machine took.
	windows := int(time.Since(start)/time.Second) + 2
	if failed5xx.Status != 503 {
		t.Fatalf("events with SSE off = %d, want 503", failed5xx.Status)
	}
	var lines401 int
	for _, m := range systemtest.LogLines(t, in) {
		if m["msg"] == "access" && m["status"] == 401.0 {
			lines401++
		}
	}
	if limit := windows * accesslog.PerSecondRefused; lines401 > limit || lines401 == 0 {
		t.Errorf("%d access lines for %d refusals, want 1 to %d (%d windows)", lines401, flood, limit, windows)
	}
	id := failed5xx.Header.Get("X-Request-Id")
	l := systemtest.AccessLine(t, in, id)
	if l == nil || l["level"] != "WARN" || l["status"] != 503.0 || l["route"] != "/api/v1/rooms/:room/events" {
		t.Errorf("the 5xx's access line = %v", l)
	}
	found := false
	for _, m := range systemtest.LogLines(t, in) {
		found = found || m["msg"] == "request failed" && m["request_id"] == id && m["level"] == "WARN"
	}
	if !found {
		t.Error("the 5xx has no WARN line with its cause and request id")
	}
	// The suppressed lines are counted by the next line of that status
	// once its second is over.
	systemtest.WaitFor(t, "a summary of the suppressed lines", func() bool {
		systemtest.Do(t, "GET", in.Base+"/api/v1/rooms/default/position", "", nil)
		return strings.Contains(in.Logs.String(), `"msg":"access lines suppressed"`)
	})
}

// TestLogLevels: WR_LOG_LEVEL=warn keeps INFO lines (the start, the
// access lines of 4xx) out; a 5xx still has its lines.
func TestLogLevels(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_LOG_FORMAT": "json", "WR_LOG_LEVEL": "warn", "WR_TRANSPORTS": "none"})
	systemtest.Do(t, "GET", in.Base+"/api/v1/rooms/default/position", "", nil)
	r := systemtest.Do(t, "GET", in.Base+"/api/v1/rooms/default/events", "", nil)
	if r.Status != 503 {
		t.Fatalf("events with SSE off = %d", r.Status)
	}
	if l := systemtest.AccessLine(t, in, r.Header.Get("X-Request-Id")); l == nil {
		t.Errorf("no access line for the 503 at warn:\n%s", in.Logs)
	}
	for _, m := range systemtest.LogLines(t, in) {
		if m["level"] == "INFO" || m["level"] == "DEBUG" {
			t.Errorf("logged below warn: %v", m)
		}
	}
}

// TestLogConfig: bad log settings are refused naming the variable; the
// defaults are info, errors, and a format chosen at start.
func TestLogConfig(t *testing.T) {
	for key, value := range map[string]string{"WR_LOG_LEVEL": "loud", "WR_LOG_FORMAT": "xml", "WR_ACCESS_LOG": "some"} {
		_, err := compose.LoadConfig(systemtest.EnvOf(map[string]string{"WR_JWT_SECRET": systemtest.TestSecret, key: value}))
		var ce *compose.ConfigError
		if !errors.As(err, &ce) || ce.Var != key {
			t.Errorf("%s=%s: err = %v, want a ConfigError naming it", key, value, err)
		}
	}
	c, err := compose.LoadConfig(systemtest.EnvOf(map[string]string{"WR_JWT_SECRET": systemtest.TestSecret}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Log.Level.String() != "INFO" || c.Log.Format != "" || c.AccessLog != accesslog.Errors {
		t.Fatalf("log defaults = %+v, access log %v", c.Log, c.AccessLog)
	}
}

// TestSSEIdsGrowAcrossReconnects: a stream reconnected with the last id
// it saw (as EventSource does) goes on with a greater id, and the ids
// follow the room's event number as the room moves.
func TestSSEIdsGrowAcrossReconnects(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	in.Enter(systemtest.User(1), "default")
	me := in.Enter(systemtest.User(2), "default").Str("queueToken")
	first := openSSEFrom(t, in, me, "")
	id1 := first.NextID(t)
	in.SetTarget("default", 1) // user1 admitted: the room's event number moves
	first.UntilPosition(t, 1)
	id2 := first.R.LastEventID()
	if !(parseID(t, id2) > parseID(t, id1)) {
		t.Fatalf("ids along a stream: %s then %s", id1, id2)
	}
	first.Res.Body.Close()

	second := openSSEFrom(t, in, me, id2)
	if id3 := second.NextID(t); !(parseID(t, id3) > parseID(t, id2)) {
		t.Fatalf("reconnected with Last-Event-ID %s, got id %s: want a greater one", id2, id3)
	}
	second.Res.Body.Close()
	// A client's made-up id cannot push the stream past what JavaScript
	// holds, nor break it.
	for _, bad := range []string{"99999999999999999999", "-5", "x"} {
		s := openSSEFrom(t, in, me, bad)
		if id := parseID(t, s.NextID(t)); id <= 0 || id >= 1<<53 {
			t.Errorf("Last-Event-ID %q: id %d", bad, id)
		}
		s.Res.Body.Close()
	}
}

// openSSEFrom opens a stream sending lastID as Last-Event-ID ("": none).
func openSSEFrom(t testing.TB, in *systemtest.Instance, queueToken, lastID string) *systemtest.SSEStream {
	t.Helper()
	req, _ := http.NewRequest("GET", in.Base+"/api/v1/rooms/default/events", nil)
	req.Header.Set("Authorization", "Bearer "+queueToken)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := systemtest.StreamClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 {
		res.Body.Close()
		t.Fatalf("events = %d", res.StatusCode)
	}
	t.Cleanup(func() { res.Body.Close() })
	return &systemtest.SSEStream{Res: res, R: sseclient.NewReader(bufio.NewReaderSize(res.Body, 4096))}
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
	o := systemtest.StartOrigin(t)
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + l.Addr().String()
	l.Close()
	in := systemtest.GatewayInstance(t, o, map[string]string{"WR_UPSTREAM": dead, "WR_LOG_FORMAT": "json"})
	c := systemtest.Visitor(t)
	code, h, _ := systemtest.Call(t, c, "GET", in.Base+"/some/page?token=x", "")
	code2, h2, _ := systemtest.Call(t, c, "POST", in.Base+"/checkout/pay", `{}`, "Accept", "application/json")
	if code != 502 || code2 != 403 {
		t.Fatalf("statuses = %d %d, want 502 403", code, code2)
	}
	id := h.Get("X-Request-Id")
	if l := systemtest.AccessLine(t, in, id); l == nil || l["route"] != "origin" || l["status"] != 502.0 || l["level"] != "WARN" {
		t.Errorf("the unprotected request's line = %v", l)
	}
	if l := systemtest.AccessLine(t, in, h2.Get("X-Request-Id")); l == nil || l["route"] != "/checkout/*" || l["status"] != 403.0 {
		t.Errorf("the protected request's line = %v", l)
	}
	found := false
	for _, m := range systemtest.LogLines(t, in) {
		found = found || m["msg"] == "gateway: origin failed" && m["request_id"] == id && m["level"] == "WARN"
	}
	if !found {
		t.Errorf("no WARN line for the origin's failure with its request id:\n%s", in.Logs)
	}
}

// BenchmarkAccessLog is the poll path from the hub's memory through the
// whole public handler (protocol filter, Fiber, the access log's check)
// with the access log off and in its default mode: a 200 costs the
// default mode a status comparison.
func BenchmarkAccessLog(b *testing.B) {
	for _, mode := range []string{"off", "errors"} {
		b.Run(mode, func(b *testing.B) {
			e := systemtest.NewEnv(b)
			in := e.Start(map[string]string{"WR_TARGET_ACTIVE": "0", "WR_ACCESS_LOG": mode, "WR_LOG_LEVEL": "info"})
			q := in.Parts.Queue
			var ticket int64
			for i := range 150 {
				st, err := q.Enter(context.Background(), "default", strconv.Itoa(i+1))
				if err != nil {
					b.Fatal(err)
				}
				ticket = st.Ticket
			}
			tok, _ := token.New(token.Config{Secret: systemtest.TestSecret}).IssueQueue("150", "default", ticket, time.Hour)
			benchHandler(b, in.Server.Public().Server().Handler, "/api/v1/rooms/default/position", tok, 200)
		})
	}
}
