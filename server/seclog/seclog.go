package seclog

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// Security events: what an operator (or a SIEM reading the log) needs to
// see an attack — failed logins, refused tokens and why, 429s by limit,
// cross-site refusals, failed admin authentication. Each is one WARN line
// with "event" set to a stable name (the constants below) and counted by
// the counter the Log is given (waitingroom_security_events_total{event}).
//
// An attacker decides how many events happen, so the log lines are rate
// limited per event name: at most secLogPerSecond lines a second each, then
// one line saying how many were suppressed (written with the next line of
// that event after the second ends). The counter counts every event,
// suppressed or not. Values taken from the request (a login id, an Origin)
// are cut to secValueMax bytes and control characters replaced, so a line
// stays small and one line.
const (
	LoginFailed    = "login_failed"  // address, loginId (cut)
	TokenRefused   = "token_refused" // address, reason, path
	RateLimited    = "rate_limited"  // address, limit, subject kind
	CrossSite      = "cross_site"    // address, origin, sec-fetch-site, method, path
	AdminAuth      = "admin_auth_failed"
	AdminThrottled = "admin_auth_throttled"
	// ChallengeRefused: an enter with a proof of work that was refused
	// (address, room, reason: pow.Reason's word).
	ChallengeRefused = "challenge_refused"
)

const (
	secLogPerSecond = 20
	secValueMax     = 64
)

// Log writes security events. It is safe for concurrent use.
type Log struct {
	log     *slog.Logger
	counter *prometheus.CounterVec // by "event"
	budget  Budget[string]         // by event name
}

// New returns a Log writing to log and counting into counter, whose one
// label is the event name.
func New(log *slog.Logger, counter *prometheus.CounterVec) *Log {
	return &Log{log: log, counter: counter}
}

// Budget is a line budget per key: at most a given number of lines in
// each one-second window, the rest counted as suppressed and reported
// once the window is over, with the key's next line (Admit). Security
// events use it per event name, the access log per status. Keys must
// come from a small fixed set: the map is never pruned. The zero value
// is ready; it is safe for concurrent use.
type Budget[K comparable] struct {
	mu   sync.Mutex
	keys map[K]*window
}

type window struct {
	start      time.Time // start of the current one-second window
	logged     int       // lines written in it
	suppressed int       // lines not written since the last summary
}

// Admit reports whether a line of key may be written at now, within
// perSecond lines a second, and how many were suppressed before it (to
// be reported first: a summary line, then this one).
func (b *Budget[K]) Admit(key K, perSecond int, now time.Time) (ok bool, suppressed int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.keys == nil {
		b.keys = map[K]*window{}
	}
	w := b.keys[key]
	if w == nil {
		w = &window{start: now}
		b.keys[key] = w
	}
	if now.Sub(w.start) >= time.Second {
		w.start, w.logged = now, 0
		suppressed, w.suppressed = w.suppressed, 0
	}
	if w.logged >= perSecond {
		w.suppressed++
		return false, 0
	}
	w.logged++
	return true, suppressed
}

// Event records one security event: counted always, logged at WARN
// within its event's line budget.
func (l *Log) Event(ctx context.Context, event string, attrs ...slog.Attr) {
	l.counter.WithLabelValues(event).Inc()
	ok, suppressed := l.budget.Admit(event, secLogPerSecond, time.Now())
	if suppressed > 0 {
		l.log.LogAttrs(ctx, slog.LevelWarn, "security events suppressed",
			slog.String("event", event), slog.Int("suppressed", suppressed))
	}
	if !ok {
		return
	}
	l.log.LogAttrs(ctx, slog.LevelWarn, "security event", append([]slog.Attr{slog.String("event", event)}, attrs...)...)
}

// Value makes a request-supplied value safe for one log line: at most
// secValueMax bytes of valid UTF-8, control characters replaced by '?'.
func Value(v string) string {
	if len(v) > secValueMax {
		v = v[:secValueMax]
		for len(v) > 0 && !utf8.ValidString(v) {
			v = v[:len(v)-1] // do not cut a character in two
		}
		v += "…"
	}
	return strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) {
			return '?'
		}
		return r
	}, v)
}
