package admin

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestParseText: texts for the page are JSON strings of at most the
// field's characters (not bytes) of valid UTF-8 without control characters,
// newlines only where allowed; "" and null clear; a refusal names the field.
func TestParseText(t *testing.T) {
	for _, tt := range []struct {
		name, raw string
		limit     int
		lines     bool
		want      string
		refused   string // a part of the refusal; "" for none
	}{
		{"plain", `"The sale restarts at 10:30"`, 500, true, "The sale restarts at 10:30", ""},
		{"newline where allowed", `"line one\nline two"`, 500, true, "line one\nline two", ""},
		{"empty clears", `""`, 500, true, "", ""},
		{"null clears", `null`, 500, true, "", ""},
		{"characters, not bytes", `"` + strings.Repeat("가", 80) + `"`, 80, false, strings.Repeat("가", 80), ""},
		{"too long", `"` + strings.Repeat("가", 81) + `"`, 80, false, "", "at most 80 characters (it has 81)"},
		{"newline in one line", `"a\nb"`, 80, false, "", "one line"},
		{"carriage return", `"a\r\nb"`, 500, true, "", "control characters other than newlines"},
		{"tab", `"a\tb"`, 500, true, "", "control characters"},
		{"escape character", `"\u001b[31m"`, 500, true, "", "control characters"},
		{"lone surrogate", `"\ud800"`, 500, true, "", "valid UTF-8"},
		{"invalid bytes", "\"a\xff\"", 500, true, "", "valid UTF-8"},
		{"not a string", `42`, 500, true, "", "must be a string"},
	} {
		got, err := parseText(json.RawMessage(tt.raw), "message", tt.limit, tt.lines)
		switch {
		case tt.refused == "" && (err != nil || got != tt.want):
			t.Errorf("%s: %q, %v; want %q", tt.name, got, err, tt.want)
		case tt.refused != "" && (err == nil || !strings.Contains(err.Error(), tt.refused) || !strings.HasPrefix(err.Error(), "message ")):
			t.Errorf("%s: %q, %v; want a refusal naming message and saying %q", tt.name, got, err, tt.refused)
		}
	}
}
