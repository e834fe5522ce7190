package server

import (
	"errors"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"waitingroom/server/api"
	"waitingroom/server/login"
	"waitingroom/server/ratelimit"
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
// where one Redis holds both (enterRoom): one script per enter, not two.
// When Redis cannot decide, each limit has a policy:
//
//	login (all four, package login) fail closed: 503 — BCrypt is the CPU sink
//	enter (per address, per user)   fail open — enter needs Redis anyway
//	enter, anonymous (per visitor;  fail open; its proof of work fails
//	  new places per address and      closed (visitorenter.go)
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
// server reports their refusals here (refuse).

// pollSlack: a poll is refused when it comes sooner than half of the
// pollAfterMs its band asked for, beyond a burst of pollBurst (jitter,
// reloads, a second tab). pollFloor is the pace assumed for a status that
// asks for no poll (READY: pollAfterMs 0).
const (
	pollSlack = 2
	pollBurst = 5
	pollFloor = time.Second
)

// limit applies one limit to subject for the request of user ("" before
// login). failOpen says what happens when Redis cannot decide. Addresses
// and users on the allow list are exempt.
func (s *Server) limit(c *fiber.Ctx, name, subject, user string, lim ratelimit.Limit, failOpen bool) error {
	return s.limits(c, user, failOpen, ratelimit.Check{Name: name, Subject: subject, Limit: lim})
}

// limits applies several limits to one request of user at once: one
// decision in one round trip, all or nothing (a request refused by one
// limit counts on none of them), answered by refused.
func (s *Server) limits(c *fiber.Ctx, user string, failOpen bool, checks ...ratelimit.Check) error {
	if !s.limited(c, user) {
		return nil
	}
	rs, err := s.limiter.Take(c.UserContext(), checks...)
	switch {
	case errors.Is(err, ratelimit.ErrUnavailable) && failOpen:
		return nil
	case err != nil:
		return errors.Join(api.ErrUnavailable, err)
	}
	return s.refused(c, checks, rs)
}

// limited reports whether user's request (user "" before login) is under
// the rate limits: they are on, and neither user nor address is on the
// allow list.
func (s *Server) limited(c *fiber.Ctx, user string) bool {
	return s.cfg.RateLimits && !s.exempt(c, user)
}

// refused is the 429 of the decision rs on checks (nil when every check
// allowed): it names the refusing limit with the longest wait, so that its
// Retry-After holds for all of them.
func (s *Server) refused(c *fiber.Ctx, checks []ratelimit.Check, rs []ratelimit.Result) error {
	refused := -1
	for i, r := range rs {
		if !r.Allowed && (refused < 0 || r.RetryAfter > rs[refused].RetryAfter) {
			refused = i
		}
	}
	if refused < 0 {
		return nil
	}
	return s.refuse(c, checks[refused].Name, rs[refused].RetryAfter)
}

// limitPoll applies the poll pace of pollAfter to user's polls of room, in
// this instance's memory (no Redis round trip). Exempt as limit is.
func (s *Server) limitPoll(c *fiber.Ctx, room, user string, pollAfter time.Duration) error {
	if !s.limited(c, user) {
		return nil
	}
	if r := s.polls.Allow(room+":"+user, pollLimit(pollAfter)); !r.Allowed {
		return s.refuse(c, "poll", r.RetryAfter)
	}
	return nil
}

// refuse is the 429 of the limit named name, counted and recorded.
func (s *Server) refuse(c *fiber.Ctx, name string, retryAfter time.Duration) error {
	s.m.RateLimited.WithLabelValues(name).Inc()
	s.sec.Event(c.UserContext(), seclog.RateLimited, slog.String("address", s.clientIP(c)),
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
