package admin

import (
	"encoding/json"
	"testing"
	"time"
)

func TestFmtDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		24 * time.Hour: "24h", 10 * time.Minute: "10m", time.Second: "1s",
		90 * time.Minute: "1h30m", 0: "0s", 5 * time.Second / 2: "2.5s",
	} {
		if got := fmtDuration(d); got != want {
			t.Errorf("fmtDuration(%v) = %q; want %q", d, got, want)
		}
	}
}

func TestParseDurationField(t *testing.T) {
	for raw, want := range map[string]time.Duration{
		`"90s"`: 90 * time.Second, `120`: 2 * time.Minute, `"24h"`: 24 * time.Hour, `1.5`: 1500 * time.Millisecond,
	} {
		got, err := parseTTL(json.RawMessage(raw))
		if err != nil || got != want {
			t.Errorf("parseTTL(%s) = %v, %v; want %v", raw, got, err, want)
		}
	}
	for raw, msg := range map[string]string{
		`"soon"`: `entryTtl "soon" is not a duration like 90s`,
		`true`:   `entryTtl must be a duration string ("90s") or a number of seconds`,
		`0`:      `entryTtl must be from 1s to 24h`,
		`"25h"`:  `entryTtl must be from 1s to 24h`,
	} {
		if _, err := parseTTL(json.RawMessage(raw)); err == nil || err.Error() != msg {
			t.Errorf("parseTTL(%s) error %v; want %q", raw, err, msg)
		}
	}
	if _, err := parseDelay(json.RawMessage(`-1`), "orderDelay"); err == nil {
		t.Error("parseDelay(-1) accepted")
	}
}

func TestParseOpensAt(t *testing.T) {
	for _, raw := range []string{`null`, `""`} {
		if at, err := parseOpensAt(json.RawMessage(raw)); err != nil || !at.IsZero() {
			t.Errorf("parseOpensAt(%s) = %v, %v; want the zero time", raw, at, err)
		}
	}
	at, err := parseOpensAt(json.RawMessage(`"2026-11-29T10:00:00+09:00"`))
	if err != nil || !at.Equal(time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)) {
		t.Errorf("parseOpensAt = %v, %v", at, err)
	}
	for _, raw := range []string{`42`, `"tomorrow"`, `"1999-12-31T23:59:59Z"`} {
		if _, err := parseOpensAt(json.RawMessage(raw)); err == nil {
			t.Errorf("parseOpensAt(%s) accepted", raw)
		}
	}
}
