package accesslog

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"waitingroom/server/seclog"
)

// Mode is which requests get a line: the operator's choice.
type Mode uint8

const (
	// Errors: every response of status 400 and above (the default).
	Errors Mode = iota
	// Off: none.
	Off
	// All: every request.
	All
)

// ParseMode reads a Mode's name: off, errors or all.
func ParseMode(v string) (Mode, error) {
	switch v {
	case "errors":
		return Errors, nil
	case "off":
		return Off, nil
	case "all":
		return All, nil
	}
	return Errors, fmt.Errorf("want off, errors or all")
}

func (m Mode) String() string {
	switch m {
	case Off:
		return "off"
	case All:
		return "all"
	}
	return "errors"
}

// The line budgets, per status and per second. A 5xx has none: each is a
// failure someone may come asking about with its request id, and clients
// cannot cause one at will (an outage can; the instance then logs one
// line per failed request). A 429 says the limits work: a few lines a
// second show it, the summary counts the rest. Other refusals (401 from
// scanners, 404 from crawlers) and, with All, the successes are bounded
// higher.
const (
	PerSecond429     = 10
	PerSecondRefused = 50
	PerSecondOK      = 1000
)

// budget is the lines a second of a status; 0: unlimited.
func budget(status int) int {
	switch {
	case status >= 500:
		return 0
	case status == 429:
		return PerSecond429
	case status >= 400:
		return PerSecondRefused
	}
	return PerSecondOK
}

// Entry is one request as logged.
type Entry struct {
	Method    string
	Route     string // the route's pattern, "unmatched", "origin"
	Status    int
	Bytes     int // body bytes sent; -1: streamed, length unknown
	Duration  time.Duration
	RequestID string // ctx should carry none: the line has it already
	Address   string // the client address (behind a trusted proxy, the one it names)
	User      string // "" when unknown
	// Judged is forward auth's question, what /_wr/auth judged (nil on any
	// other line): written as judged_method, judged_route, room, decision.
	Judged *Judged
}

// Judged is the request a forward-auth question was about: its method,
// the route pattern that covered it ("" none: never the raw path), the
// room, and the decision: "pass", "wait", "refused" or "unprotected".
type Judged struct {
	Method, Route, Room, Decision string
}

// Log writes access lines. It is safe for concurrent use.
type Log struct {
	log  *slog.Logger
	mode Mode
	now  func() time.Time
	// by status: a flood of one status does not use up another's lines
	budget seclog.Budget[int]
}

// New returns a Log in mode writing to log.
func New(log *slog.Logger, mode Mode) *Log {
	return &Log{log: log, mode: mode, now: time.Now}
}

// WithClock makes l read the time from now (tests of the budget).
func (l *Log) WithClock(now func() time.Time) *Log {
	l.now = now
	return l
}

// Mode is l's mode.
func (l *Log) Mode() Mode { return l.mode }

// Wants reports whether a response of status gets a line (budget aside):
// the hot path's only question when the answer is no.
func (l *Log) Wants(status int) bool {
	switch l.mode {
	case Off:
		return false
	case Errors:
		return status >= 400
	}
	return true
}

// Write logs e if l wants its status, the level is enabled and the status
// has lines left this second. The first line of a status after some were
// suppressed is preceded by one saying how many.
func (l *Log) Write(ctx context.Context, e Entry) {
	level := slog.LevelInfo
	if e.Status >= 500 {
		level = slog.LevelWarn
	}
	if !l.Wants(e.Status) || !l.log.Enabled(ctx, level) {
		return
	}
	if n := budget(e.Status); n > 0 {
		ok, suppressed := l.budget.Admit(e.Status, n, l.now())
		if suppressed > 0 {
			l.log.LogAttrs(ctx, level, "access lines suppressed",
				slog.Int("status", e.Status), slog.Int("suppressed", suppressed))
		}
		if !ok {
			return
		}
	}
	attrs := [...]slog.Attr{
		{}, {}, {}, {},
		slog.String("method", e.Method),
		slog.String("route", e.Route),
		slog.Int("status", e.Status),
		slog.Int("bytes", e.Bytes),
		slog.Float64("duration_ms", float64(e.Duration.Microseconds())/1000),
		slog.String("address", e.Address),
		slog.String("request_id", e.RequestID),
		slog.String("user", e.User),
	}
	first, n := 4, len(attrs)
	if j := e.Judged; j != nil {
		first = 0
		attrs[0], attrs[1] = slog.String("judged_method", j.Method), slog.String("judged_route", j.Route)
		attrs[2], attrs[3] = slog.String("room", j.Room), slog.String("decision", j.Decision)
	}
	if e.User == "" {
		n-- // omitted when unknown
	}
	l.log.LogAttrs(ctx, level, "access", attrs[first:n]...)
}
