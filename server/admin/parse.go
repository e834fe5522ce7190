package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// parseOpensAt reads an opening time: an RFC 3339 string, or null or ""
// to clear it (returned as the zero time).
func parseOpensAt(raw json.RawMessage) (time.Time, error) {
	var str *string
	if err := json.Unmarshal(raw, &str); err != nil {
		return time.Time{}, errors.New("opensAt must be an RFC 3339 time such as \"2026-11-29T10:00:00+09:00\", or null to clear it")
	}
	if str == nil || *str == "" {
		return time.Time{}, nil
	}
	at, err := time.Parse(time.RFC3339, *str)
	if err != nil || at.Year() < 2000 || at.Year() > 9999 {
		return time.Time{}, fmt.Errorf("opensAt %q is not an RFC 3339 time such as \"2026-11-29T10:00:00+09:00\"", *str)
	}
	return at, nil
}

// parseTTL reads a room's entryTtl: "90s" or a number of seconds, from
// 1s to 24h.
func parseTTL(raw json.RawMessage) (time.Duration, error) {
	return parseDurationField(raw, "entryTtl", "90s", time.Second, time.Second, 24*time.Hour)
}

// parseDurationField reads a JSON duration string (like example) or a
// number of unit, within [lo, hi]; errors name the field.
func parseDurationField(raw json.RawMessage, field, example string, unit, lo, hi time.Duration) (time.Duration, error) {
	var d time.Duration
	var str string
	var n float64
	unitName := map[time.Duration]string{time.Millisecond: "milliseconds", time.Second: "seconds"}[unit]
	switch {
	case json.Unmarshal(raw, &str) == nil:
		v, err := time.ParseDuration(str)
		if err != nil {
			return 0, fmt.Errorf("%s %q is not a duration like %s", field, str, example)
		}
		d = v
	case json.Unmarshal(raw, &n) == nil:
		d = time.Duration(n * float64(unit))
	default:
		return 0, fmt.Errorf("%s must be a duration string (%q) or a number of %s", field, example, unitName)
	}
	if d < lo || d > hi {
		return 0, fmt.Errorf("%s must be from %s to %s", field, fmtDuration(lo), fmtDuration(hi))
	}
	return d, nil
}

// fmtDuration writes whole hours and minutes as "24h" and "10m", not "24h0m0s".
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// Bounds of the texts a room shows (characters, not bytes).
const (
	maxMessage     = 500
	maxDisplayName = 80
	maxDescription = 500
)

// parseText reads a text for the page: a JSON string (null or "" clears:
// returned as ""), at most limit characters of valid UTF-8 without control
// characters — newlines allowed when lines. Errors name the field.
func parseText(raw json.RawMessage, field string, limit int, lines bool) (string, error) {
	// Invalid UTF-8 inside a JSON string would be replaced silently when
	// decoded: refuse it, and a decoded replacement character (from a
	// lone surrogate such as "\ud800"), instead.
	if !utf8.Valid(raw) {
		return "", fmt.Errorf("%s must be valid UTF-8", field)
	}
	var str *string
	if err := json.Unmarshal(raw, &str); err != nil {
		return "", fmt.Errorf("%s must be a string (\"\" or null clears it)", field)
	}
	if str == nil {
		return "", nil
	}
	if strings.ContainsRune(*str, utf8.RuneError) {
		return "", fmt.Errorf("%s must be valid UTF-8 (no replacement characters or lone surrogates)", field)
	}
	if n := utf8.RuneCountInString(*str); n > limit {
		return "", fmt.Errorf("%s must be at most %d characters (it has %d)", field, limit, n)
	}
	for _, r := range *str {
		if unicode.IsControl(r) && (r != '\n' || !lines) {
			if lines {
				return "", fmt.Errorf("%s must not contain control characters other than newlines", field)
			}
			return "", fmt.Errorf("%s must be one line without control characters", field)
		}
	}
	return *str, nil
}
