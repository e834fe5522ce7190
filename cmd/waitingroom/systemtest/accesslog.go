package systemtest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// LogLines parses an instance's JSON log (WR_LOG_FORMAT=json).
func LogLines(t testing.TB, in *Instance) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(in.Logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a log line is not JSON: %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// AccessLine is the access line of the request with id, or nil.
func AccessLine(t testing.TB, in *Instance, id string) map[string]any {
	t.Helper()
	for _, m := range LogLines(t, in) {
		if m["msg"] == "access" && m["request_id"] == id {
			return m
		}
	}
	return nil
}

// NextID reads the next status event and returns its id.
func (s *SSEStream) NextID(t testing.TB) string {
	t.Helper()
	for {
		ev, err := s.R.Next()
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		if ev.Type == "status" {
			return ev.ID
		}
	}
}

func (s *SSEStream) UntilPosition(t testing.TB, pos int64) {
	t.Helper()
	s.Until(t, fmt.Sprintf("at position %d", pos), func(_ string, m StreamMsg) bool { return m.Position == pos })
}
