package httplimit

import (
	"errors"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"waitingroom/server/api"
	"waitingroom/server/login"
	"waitingroom/server/ratelimit"
	"waitingroom/server/ratelimit/local"
	"waitingroom/server/seclog"
)

// Layer 1: who gets in. Each limit is one GCRA decision on Redis, shared by
// every instance, taken BEFORE the work it protects (BCrypt at login, a
// ticket at enter, the token at order) — except the poll pace, below.
// Per-address limits count by clientKey (IPv4 address, IPv6 /64), never
// the exact address. A request under two limits (enter: address and user;
// order: room and user) has them decided at once, all or nothing, in one
// round trip (limits, ratelimit.Limiter.Take): a request refused by one
// counts on neither. Enter's are decided inside the enter script itself
// where one Redis holds both (the server's enterRoom): one script per
// enter, not two.
// When Redis cannot decide, each limit has a policy:
//
//	login (all four, package login) fail closed: 503 — BCrypt is the CPU sink
//	enter (per address, per user)   fail open — enter needs Redis anyway
//	enter, anonymous (per visitor;  fail open; its proof of work fails
//	  new places per address and      closed (the server's visitorenter.go)
//	  per network)
//	poll (per user and room)        in memory: never asks Redis
//	stream (per user and room)      fail open
//	orders (per room, per user)     fail closed: 503 — the last line before the database
//	orders read (per user)          fail closed: 503 — each read is a query
//
// The poll pace is kept in each instance's memory (package
// ratelimit/local), one key per user and room: a poll answered from the
// hub's memory then makes no Redis round trip, and one at the front at
// most one (its status, or the event-number read it shares). The work it
// guards is this instance's own (a poll costs no shared resource but the
// status read). What that gives up: each instance counts alone, so a
// client spreading a refresh storm over N instances gets at most N times
// its band's pace (and N bursts); one that keeps its connection — a
// browser does — gets the pace. Login, enter, stream and order limits,
// which guard shared work, stay shared in Redis.
//
// A refusal is 429 with the contract's JSON, Retry-After (whole seconds,
// rounded up), a waitingroom_rate_limited_total{limit} count and a
// rate_limited security event naming the limit and the kind of subject.
//
// Login's four limits count failures, decided before and settled after
// BCrypt: package login owns them (its doc says why each is as it is); the
// server reports their refusals here (Refuse).

// pollSlack: a poll is refused when it comes sooner than half of the
// pollAfterMs its band asked for, beyond a burst of pollBurst (jitter,
// reloads, a second tab). PollFloor is the pace assumed for a status that
// asks for no poll (READY: pollAfterMs 0).
const (
	pollSlack = 2
	pollBurst = 5
	// PollFloor is the pace assumed for a status that asks for no poll.
	PollFloor = time.Second
)

// Options are the limits' parts.
type Options struct {
	On      bool               // off: no request is limited
	Limiter *ratelimit.Limiter // the shared limits, in Redis
	Polls   *local.Limiter     // the poll pace, in this instance's memory
	// Exempt reports whether the request's address or user ("" before
	// login) is on the allow list; ClientIP is the client address as
	// logged.
	Exempt   func(c *fiber.Ctx, user string) bool
	ClientIP func(c *fiber.Ctx) string
	Sec      *seclog.Log
	// RateLimited counts the refusals by limit
	// (waitingroom_rate_limited_total).
	RateLimited *prometheus.CounterVec
}

// Limits apply layer 1's limits to the requests of the public app.
type Limits struct{ o Options }

// New returns the Limits.
func New(o Options) *Limits { return &Limits{o: o} }

// One applies one limit to subject for the request of user ("" before
// login). failOpen says what happens when Redis cannot decide. Addresses
// and users on the allow list are exempt.
func (l *Limits) One(c *fiber.Ctx, name, subject, user string, lim ratelimit.Limit, failOpen bool) error {
	return l.All(c, user, failOpen, ratelimit.Check{Name: name, Subject: subject, Limit: lim})
}

// All applies several limits to one request of user at once: one
// decision in one round trip, all or nothing (a request refused by one
// limit counts on none of them), answered by Refused.
func (l *Limits) All(c *fiber.Ctx, user string, failOpen bool, checks ...ratelimit.Check) error {
	if !l.Applies(c, user) {
		return nil
	}
	rs, err := l.o.Limiter.Take(c.UserContext(), checks...)
	switch {
	case errors.Is(err, ratelimit.ErrUnavailable) && failOpen:
		return nil
	case err != nil:
		return errors.Join(api.ErrUnavailable, err)
	}
	return l.Refused(c, checks, rs)
}

// Applies reports whether user's request (user "" before login) is under
// the rate limits: they are on, and neither user nor address is on the
// allow list.
func (l *Limits) Applies(c *fiber.Ctx, user string) bool {
	return l.o.On && !l.o.Exempt(c, user)
}

// Refused is the 429 of the decision rs on checks (nil when every check
// allowed): it names the refusing limit with the longest wait, so that its
// Retry-After holds for all of them.
func (l *Limits) Refused(c *fiber.Ctx, checks []ratelimit.Check, rs []ratelimit.Result) error {
	refused := -1
	for i, r := range rs {
		if !r.Allowed && (refused < 0 || r.RetryAfter > rs[refused].RetryAfter) {
			refused = i
		}
	}
	if refused < 0 {
		return nil
	}
	return l.Refuse(c, checks[refused].Name, rs[refused].RetryAfter)
}

// Poll applies the poll pace of pollAfter to user's polls of room, in
// this instance's memory (no Redis round trip). Exempt as One is.
func (l *Limits) Poll(c *fiber.Ctx, room, user string, pollAfter time.Duration) error {
	if !l.Applies(c, user) {
		return nil
	}
	if r := l.o.Polls.Allow(room+":"+user, pollLimit(pollAfter)); !r.Allowed {
		return l.Refuse(c, "poll", r.RetryAfter)
	}
	return nil
}

// Refuse is the 429 of the limit named name, counted and recorded.
func (l *Limits) Refuse(c *fiber.Ctx, name string, retryAfter time.Duration) error {
	l.o.RateLimited.WithLabelValues(name).Inc()
	l.o.Sec.Event(c.UserContext(), seclog.RateLimited, slog.String("address", l.o.ClientIP(c)),
		slog.String("limit", name), slog.String("subject", limitSubjects[name]))
	return &api.Error{Status: fiber.StatusTooManyRequests, Code: "rate_limited",
		Message:    "too many requests; retry after " + strconv.FormatFloat(retryAfter.Seconds(), 'f', 1, 64) + " s",
		RetryAfter: int(math.Ceil(retryAfter.Seconds()))}
}

// limitSubjects names what each limit counts by, for the log.
var limitSubjects = map[string]string{
	login.LimitAttemptsIP: "address",
	login.LimitIP:         "address",
	login.LimitPair:       "account_address",
	login.LimitID:         "account",
	"enter_ip":            "address",
	"enter_user":          "user",
	"enter_new_ip":        "room_address",
	"enter_new_net":       "room_network",
	"poll":                "user_room",
	"stream":              "user_room",
	"order_room":          "room",
	"order_user":          "user",
	"orders_read":         "user",
}

// pollLimit is the band's own pace: pollAfter ÷ pollSlack between polls.
func pollLimit(pollAfter time.Duration) ratelimit.Limit {
	return ratelimit.Limit{Rate: 1, Per: max(pollAfter/pollSlack, time.Millisecond), Burst: pollBurst}
}
