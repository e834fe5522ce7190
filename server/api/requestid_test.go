package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"waitingroom/server/api"
)

func TestValidRequestID(t *testing.T) {
	for _, c := range []struct {
		id   string
		want bool
	}{
		{"", false},
		{"a", true},
		{"0b6f1c2e-4a8d-4d1b-9a57-3c2f9e1d8b40", true},
		{"Root=1-5759e988/bd862e3f@x+y.z_w:1", true},
		{strings.Repeat("x", 128), true},
		{strings.Repeat("x", 129), false},
		{"two words", false},
		{"tab\there", false},
		{"line\nbreak", false},
		{`quote"`, false},
		{"é", false},
		{"semi;colon", false},
	} {
		if got := api.ValidRequestID([]byte(c.id)); got != c.want {
			t.Errorf("ValidRequestID(%q) = %v, want %v", c.id, got, c.want)
		}
	}
	if id := api.NewRequestID(); !api.ValidRequestID([]byte(id)) || len(id) != 22 || id == api.NewRequestID() {
		t.Errorf("NewRequestID() = %q: want 22 fit characters, different each time", id)
	}
}

// TestLogHandlerAddsTheRequestID: a JSON line logged with a request's
// context (a fasthttp request's or one derived from it) has request_id;
// one without has none; wrapping twice writes it once.
func TestLogHandlerAddsTheRequestID(t *testing.T) {
	var buf bytes.Buffer
	h := api.LogHandler(slog.NewJSONHandler(&buf, nil))
	log := slog.New(api.LogHandler(h)).With("component", "test")
	line := func() map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
			t.Fatalf("%v: %s", err, buf.String())
		}
		buf.Reset()
		return m
	}
	var fctx fasthttp.RequestCtx
	api.SetRequestID(&fctx, "edge-1")
	log.InfoContext(&fctx, "from the fasthttp request")
	if m := line(); m["request_id"] != "edge-1" || m["component"] != "test" {
		t.Errorf("line %v: want request_id edge-1 and component", m)
	}
	log.WarnContext(context.WithValue(&fctx, struct{}{}, 1), "derived")
	if m := line(); m["request_id"] != "edge-1" {
		t.Errorf("line %v: want request_id edge-1", m)
	}
	log.Info("no request")
	if m := line(); m["request_id"] != nil {
		t.Errorf("line %v: want no request_id", m)
	}
	log.InfoContext(&fctx, "once")
	if n := strings.Count(buf.String(), `"request_id"`); n != 1 {
		t.Errorf("request_id written %d times: %s", n, buf.String())
	}
}
