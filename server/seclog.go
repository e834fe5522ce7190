package server

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"waitingroom/server/token"
)

// Security events: what an operator (or a SIEM reading the log) needs to
// see an attack — failed logins, refused tokens and why, 429s by limit,
// cross-site refusals, failed admin authentication. Each is one WARN line
// with "event" set to a stable name (the constants below) and counted in
// waitingroom_security_events_total{event}.
//
// An attacker decides how many events happen, so the log lines are rate
// limited per event name: at most secLogPerSecond lines a second each, then
// one line saying how many were suppressed (written with the next line of
// that event after the second ends). The counter counts every event,
// suppressed or not. Values taken from the request (a login id, an Origin)
// are cut to secValueMax bytes and control characters replaced, so a line
// stays small and one line.
const (
	evLoginFailed = "login_failed"  // address, loginId (cut)
	evTokenRefuse = "token_refused" // address, reason, path
	evRateLimited = "rate_limited"  // address, limit, subject kind
	evCrossSite   = "cross_site"    // address, origin, sec-fetch-site, method, path
	evAdminAuth   = "admin_auth_failed"
	evAdminThrot  = "admin_auth_throttled"
)

const (
	secLogPerSecond = 20
	secValueMax     = 64
)

// secLog rate-limits security log lines per event name.
type secLog struct {
	mu     sync.Mutex
	events map[string]*secWindow
}

type secWindow struct {
	start      time.Time // start of the current one-second window
	logged     int       // lines written in it
	suppressed int       // lines not written since the last summary
}

// admit reports whether a line of event may be written now, and how many
// were suppressed before it (to be reported first).
func (l *secLog) admit(event string, now time.Time) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.events == nil {
		l.events = map[string]*secWindow{}
	}
	w := l.events[event] // event names are constants: the map stays small
	if w == nil {
		w = &secWindow{start: now}
		l.events[event] = w
	}
	if now.Sub(w.start) >= time.Second {
		w.start, w.logged = now, 0
		suppressed, w.suppressed = w.suppressed, 0
	}
	if w.logged >= secLogPerSecond {
		w.suppressed++
		return false, 0
	}
	w.logged++
	return true, suppressed
}

// securityEvent records one security event: counted always, logged at WARN
// within its event's line budget.
func (s *Server) securityEvent(ctx context.Context, event string, attrs ...slog.Attr) {
	s.m.secEvents.WithLabelValues(event).Inc()
	ok, suppressed := s.sec.admit(event, time.Now())
	if suppressed > 0 {
		s.log.LogAttrs(ctx, slog.LevelWarn, "security events suppressed",
			slog.String("event", event), slog.Int("suppressed", suppressed))
	}
	if !ok {
		return
	}
	s.log.LogAttrs(ctx, slog.LevelWarn, "security event", append([]slog.Attr{slog.String("event", event)}, attrs...)...)
}

// logValue makes a request-supplied value safe for one log line: at most
// secValueMax bytes of valid UTF-8, control characters replaced by '?'.
func logValue(v string) string {
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

// noteRefusal records the security event of a handler's refusal, if it is
// one: a refused token (with the reason, one of token.Reason's fixed words,
// never the token or the request's bytes). Rate-limit refusals are recorded
// where they are decided (limit), with the limit's name.
func (s *Server) noteRefusal(c *fiber.Ctx, err error) {
	var reason string
	switch {
	case errors.Is(err, token.ErrInvalid):
		reason = token.Reason(err)
	case errors.Is(err, errWrongRoom):
		reason = "wrong_room"
	default:
		return
	}
	s.securityEvent(c.UserContext(), evTokenRefuse, slog.String("address", s.clientIP(c)),
		slog.String("reason", reason), slog.String("method", c.Method()), slog.String("path", logValue(c.Path())))
}
