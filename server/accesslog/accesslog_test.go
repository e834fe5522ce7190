package accesslog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"waitingroom/server/accesslog"
)

// clock is a time the test moves.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newLog(mode accesslog.Mode, level slog.Level) (*accesslog.Log, *bytes.Buffer, *clock) {
	var buf bytes.Buffer
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	l := accesslog.New(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: level})), mode).WithClock(c.now)
	return l, &buf, c
}

func lines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func entry(status int) accesslog.Entry {
	return accesslog.Entry{Method: "GET", Route: "/api/v1/rooms/:room/position", Status: status, Bytes: 42,
		Duration: 1500 * time.Microsecond, RequestID: "rid", Address: "192.0.2.1", User: "7"}
}

func TestLineFields(t *testing.T) {
	l, buf, _ := newLog(accesslog.All, slog.LevelInfo)
	l.Write(context.Background(), entry(404))
	e := entry(200)
	e.User = ""
	l.Write(context.Background(), e)
	l.Write(context.Background(), entry(503))
	got := lines(t, buf)
	if len(got) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(got), buf)
	}
	want := map[string]any{"level": "INFO", "msg": "access", "method": "GET", "route": "/api/v1/rooms/:room/position",
		"status": 404.0, "bytes": 42.0, "duration_ms": 1.5, "address": "192.0.2.1", "request_id": "rid", "user": "7"}
	for k, v := range want {
		if got[0][k] != v {
			t.Errorf("%s = %v, want %v", k, got[0][k], v)
		}
	}
	if _, ok := got[1]["user"]; ok {
		t.Errorf("an unknown user is written: %v", got[1])
	}
	if got[2]["level"] != "WARN" {
		t.Errorf("a 5xx is logged at %v, want WARN", got[2]["level"])
	}
}

func TestModes(t *testing.T) {
	for _, c := range []struct {
		mode  accesslog.Mode
		level slog.Level
		want  []float64 // statuses logged of 200, 404, 429, 500
	}{
		{accesslog.Off, slog.LevelDebug, nil},
		{accesslog.Errors, slog.LevelInfo, []float64{404, 429, 500}},
		{accesslog.All, slog.LevelInfo, []float64{200, 404, 429, 500}},
		{accesslog.All, slog.LevelWarn, []float64{500}}, // WR_LOG_LEVEL=warn: 5xx only
		{accesslog.All, slog.LevelError, nil},
	} {
		l, buf, _ := newLog(c.mode, c.level)
		for _, st := range []int{200, 404, 429, 500} {
			l.Write(context.Background(), entry(st))
		}
		var got []float64
		for _, m := range lines(t, buf) {
			got = append(got, m["status"].(float64))
		}
		if len(got) != len(c.want) {
			t.Errorf("%v at %v: logged %v, want %v", c.mode, c.level, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%v at %v: logged %v, want %v", c.mode, c.level, got, c.want)
			}
		}
	}
}

// TestBudget: a flood of one status writes its budget of lines a second;
// the first line of the next second is preceded by one counting the rest.
// Other statuses keep their own budgets, and a 5xx is always written.
func TestBudget(t *testing.T) {
	l, buf, clk := newLog(accesslog.Errors, slog.LevelInfo)
	ctx := context.Background()
	for i := range 5000 {
		l.Write(ctx, entry(429))
		l.Write(ctx, entry(401))
		if i%1000 == 0 {
			l.Write(ctx, entry(503))
		}
	}
	count := func() map[float64]int {
		n := map[float64]int{}
		for _, m := range lines(t, buf) {
			if m["msg"] == "access lines suppressed" {
				n[-m["status"].(float64)] += int(m["suppressed"].(float64))
				continue
			}
			n[m["status"].(float64)]++
		}
		return n
	}
	got := count()
	if got[429] != accesslog.PerSecond429 || got[401] != accesslog.PerSecondRefused || got[503] != 5 {
		t.Fatalf("lines by status = %v, want %d 429s, %d 401s and every 503 (5)", got, accesslog.PerSecond429, accesslog.PerSecondRefused)
	}
	clk.t = clk.t.Add(time.Second)
	buf.Reset()
	l.Write(ctx, entry(429))
	got = count()
	if got[429] != 1 || got[-429] != 5000-accesslog.PerSecond429 {
		t.Fatalf("next second: %v, want one 429 line after a summary of %d suppressed", got, 5000-accesslog.PerSecond429)
	}
}

func TestParseMode(t *testing.T) {
	for _, v := range []string{"off", "errors", "all"} {
		m, err := accesslog.ParseMode(v)
		if err != nil || m.String() != v {
			t.Errorf("ParseMode(%q) = %v, %v", v, m, err)
		}
	}
	if _, err := accesslog.ParseMode("yes"); err == nil {
		t.Error("ParseMode(yes) is accepted")
	}
}

// BenchmarkWanted200 is the hot path: a 200 under the default mode.
func BenchmarkWanted200(b *testing.B) {
	l, _, _ := newLog(accesslog.Errors, slog.LevelInfo)
	b.ReportAllocs()
	for b.Loop() {
		if l.Wants(200) {
			b.Fatal("a 200 is wanted in errors mode")
		}
	}
}
