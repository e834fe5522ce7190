package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
)

const (
	// Keep is how many entries the log holds (the newest).
	Keep = 1000
	// MaxBody bounds the request body kept in an entry, in bytes.
	MaxBody = 2 << 10
	// MaxDoc bounds each of the documents before and after, in bytes.
	MaxDoc = 16 << 10
)

// Entry is one change made through the admin API.
type Entry struct {
	At     time.Time `json:"at"`     // when the change was answered
	Token  string    `json:"token"`  // the admin token's Fingerprint
	Addr   string    `json:"addr"`   // the client address
	Method string    `json:"method"` // e.g. "PUT"
	Path   string    `json:"path"`   // e.g. "/admin/rooms/default"
	// Body is the request body as sent, cut to MaxBody bytes (then
	// BodyTruncated is true).
	Body          string `json:"body"`
	BodyTruncated bool   `json:"bodyTruncated"`
	// Before and After are the resource's document (its GET) before and
	// after the change: a JSON value, null when there was none (a room
	// the change created), or — past MaxDoc bytes — a string holding the
	// document's first MaxDoc bytes followed by "…".
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
}

// Fingerprint names an admin token without revealing it: the first 8 hex
// digits of its SHA-256.
func Fingerprint(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:4])
}

// Body returns a request body as an entry keeps it: cut to MaxBody bytes
// (on a character boundary) and whether it was cut.
func Body(b []byte) (string, bool) {
	if len(b) <= MaxBody {
		return strings.ToValidUTF8(string(b), "\uFFFD"), false
	}
	return cut(b, MaxBody), true
}

// Doc returns a document as an entry keeps it: compact JSON when it fits
// in MaxDoc bytes, else a JSON string of its first MaxDoc bytes and "…";
// null when doc is empty or not JSON.
func Doc(doc []byte) json.RawMessage {
	var buf bytes.Buffer
	if len(doc) == 0 || json.Compact(&buf, doc) != nil {
		return json.RawMessage("null")
	}
	if buf.Len() <= MaxDoc {
		return buf.Bytes()
	}
	s, _ := json.Marshal(cut(buf.Bytes(), MaxDoc) + "…")
	return s
}

// cut is the first n bytes of b, backed off to a character boundary.
func cut(b []byte, n int) string {
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return strings.ToValidUTF8(string(b[:n]), "\uFFFD")
}

// Log is the audit log in Redis.
type Log struct {
	rdb redis.UniversalClient
	key string
}

// New returns the log under prefix (the instance's key prefix).
func New(rdb redis.UniversalClient, prefix string) *Log {
	return &Log{rdb: rdb, key: prefix + "admin:audit"}
}

// Record adds e as the newest entry, dropping the oldest past Keep.
func (l *Log) Record(ctx context.Context, e Entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("audit: record: %w", err)
	}
	_, err = l.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.LPush(ctx, l.key, b)
		p.LTrim(ctx, l.key, 0, Keep-1)
		return nil
	})
	if err != nil {
		return fmt.Errorf("audit: record: %w", err)
	}
	return nil
}

// Recent returns the newest entries, at most limit (1 to Keep), newest
// first.
func (l *Log) Recent(ctx context.Context, limit int) ([]Entry, error) {
	limit = min(max(limit, 1), Keep)
	raw, err := l.rdb.LRange(ctx, l.key, 0, int64(limit-1)).Result()
	if err != nil {
		return nil, fmt.Errorf("audit: read: %w", err)
	}
	out := make([]Entry, 0, len(raw))
	for _, r := range raw {
		var e Entry
		if err := json.Unmarshal([]byte(r), &e); err != nil {
			return nil, fmt.Errorf("audit: read: an entry is not JSON: %w", err)
		}
		out = append(out, e)
	}
	return out, nil
}
