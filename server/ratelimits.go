package server

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"waitingroom/server/api"
	"waitingroom/server/ratelimit"
	"waitingroom/server/seclog"
)

// Layer 1: who gets in. Each limit is one GCRA decision on Redis, shared by
// every instance, taken BEFORE the work it protects (BCrypt at login, a
// ticket at enter, the token at order). Per-address limits count by
// clientKey (IPv4 address, IPv6 /64), never the exact address. When Redis
// cannot decide, each limit has a policy:
//
//	login (all four below)        fail closed: 503 — BCrypt is the CPU sink
//	enter (per address, per user) fail open — enter needs Redis anyway
//	poll (per user and room)      fail open — a poll is cheap
//	stream (per user and room)    fail open
//	orders (per room, per user)   fail closed: 503 — the last line before the database
//
// A refusal is 429 with the contract's JSON, Retry-After (whole seconds,
// rounded up), a waitingroom_rate_limited_total{limit} count and a
// rate_limited security event naming the limit and the kind of subject.
//
// Login counts FAILURES, so that nobody can lock a buyer out of their
// account (a soft lockout), while credential stuffing stays
// bounded before BCrypt:
//
//	login_attempts_ip  WR_LIMIT_LOGIN_ATTEMPTS_IP 120/1m:60  every attempt per address: the CPU guard
//	                   against one client looping on an account it knows the password of
//	login_ip           WR_LIMIT_LOGIN_IP          10/1m:10   failures per address (any accounts)
//	login_pair         WR_LIMIT_LOGIN_PAIR        5/5m:5     failures per account and address
//	login_id           WR_LIMIT_LOGIN_ID          10/1m:5    failures per account, from anywhere
//
// Before BCrypt, login_id is peeked (nothing recorded), then one script
// decides login_attempts_ip, login_ip and login_pair at once, all or
// nothing (their keys share the address as Redis hash tag): it records the
// attempt on login_attempts_ip and reserves one failure on login_pair;
// login_ip is only peeked. After BCrypt, a wrong password charges login_ip
// and login_id and lets the pair's reservation stand; a correct one (or no
// verdict: the database could not answer) refunds the reservation.
//
// Why the pair is reserved but login_ip only peeked: a reservation keeps a
// bound exact under concurrency (an address gets 5 guesses at an account,
// not 5 plus however many it sends at once), but while BCrypt runs it
// holds a place like a failure. Concurrent logins of one account from one
// address are not a pattern worth serving; many users logging in at once
// behind one NAT (an office, a mobile carrier) are, so login_ip never
// counts successes, even in flight. Its bound under concurrency is its
// budget plus the attempts one address has in flight, themselves bounded
// by login_attempts_ip's burst.
//
// login_id is soft: when it is exhausted, the attempt is refused only if
// the (account, address) pair is in debt — this address has failed on this
// account lately (within login_pair's interval, a minute by default). An
// address that has not been failing goes on to BCrypt, so the owner with
// the right password is never refused by what others did. A failure there
// puts the pair in debt, so a botnet gets one guess per address per
// interval on an account under attack, within login_ip's budget per
// address. login_id is charged after a failed verify, saturating (it never
// owes more than its burst, so once the failures stop it recovers within
// one interval).

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
	if !s.cfg.RateLimits || s.exempt(c, user) {
		return nil
	}
	r, err := s.limiter.Allow(c.UserContext(), name, subject, lim)
	switch {
	case errors.Is(err, ratelimit.ErrUnavailable) && failOpen:
		return nil
	case err != nil:
		return errors.Join(api.ErrUnavailable, err)
	case r.Allowed:
		return nil
	}
	return s.refuse(c, name, r.RetryAfter)
}

// refuse is the 429 of the limit named name, counted and recorded.
func (s *Server) refuse(c *fiber.Ctx, name string, retryAfter time.Duration) error {
	s.m.rateLimited.WithLabelValues(name).Inc()
	s.sec.Event(c.UserContext(), seclog.RateLimited, slog.String("address", s.clientIP(c)),
		slog.String("limit", name), slog.String("subject", limitSubjects[name]))
	return &api.Error{Status: fiber.StatusTooManyRequests, Code: "rate_limited",
		Message:    "too many requests; retry after " + strconv.FormatFloat(retryAfter.Seconds(), 'f', 1, 64) + " s",
		RetryAfter: int(math.Ceil(retryAfter.Seconds()))}
}

// limitSubjects names what each limit counts by, for the log.
var limitSubjects = map[string]string{
	"login_attempts_ip": "address",
	"login_ip":          "address",
	"login_pair":        "account_address",
	"login_id":          "account",
	"enter_ip":          "address",
	"enter_user":        "user",
	"poll":              "user_room",
	"stream":            "user_room",
	"order_room":        "room",
	"order_user":        "user",
}

// loginGate applies the login limits (see the header) to an attempt on
// account from this request's address, before BCrypt. It returns the
// function that settles the attempt once the password is checked — failed:
// a wrong password (the pair's reservation stands, login_ip and login_id
// are charged); else a success or no verdict (the reservation is
// refunded) — or nil when the limits are off or the address exempt.
func (s *Server) loginGate(c *fiber.Ctx, account string) (settle func(failed bool), err error) {
	if !s.cfg.RateLimits || s.exempt(c, "") {
		return nil, nil
	}
	ctx := c.UserContext()
	addr := s.clientKey(c)
	lim := s.cfg.Limits
	id := ratelimit.Check{Name: "login_id", Subject: account, Limit: lim.LoginID}
	attempts := ratelimit.Check{Name: "login_attempts_ip", Slot: addr, Limit: lim.LoginAttemptsIP}
	failures := ratelimit.Check{Name: "login_ip", Slot: addr, Limit: lim.LoginIP}
	pair := ratelimit.Check{Name: "login_pair", Slot: addr, Subject: account, Limit: lim.LoginPair}
	idr, err := s.limiter.Peek(ctx, id)
	if err != nil {
		return nil, errors.Join(api.ErrUnavailable, err)
	}
	peeked := failures
	peeked.PeekOnly = true
	taken, err := s.limiter.Take(ctx, attempts, peeked, pair)
	if err != nil {
		return nil, errors.Join(api.ErrUnavailable, err)
	}
	for i, name := range []string{"login_attempts_ip", "login_ip", "login_pair"} {
		if !taken[i].Allowed {
			return nil, s.refuse(c, name, taken[i].RetryAfter)
		}
	}
	if !idr[0].Allowed && taken[2].InDebt() {
		// The account is under attack and this address has been failing
		// on it: refused, and its reservation given back (nothing ran).
		if err := s.limiter.Refund(ctx, pair); err != nil {
			s.log.LogAttrs(ctx, slog.LevelWarn, "login limits: refund failed", slog.String("error", err.Error()))
		}
		return nil, s.refuse(c, "login_id", idr[0].RetryAfter)
	}
	return func(failed bool) {
		// After BCrypt: the answer is decided; settling must not be lost
		// because the client went away, nor delay the answer for long.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		var err error
		if failed {
			_, err = s.limiter.Charge(sctx, failures)
			if _, ierr := s.limiter.Charge(sctx, id); err == nil {
				err = ierr
			}
		} else {
			err = s.limiter.Refund(sctx, pair)
		}
		if err != nil {
			s.log.LogAttrs(ctx, slog.LevelWarn, "login limits: settling an attempt failed", slog.Bool("failed", failed), slog.String("error", err.Error()))
		}
	}, nil
}

// pollLimit is the band's own pace: pollAfter ÷ pollSlack between polls.
func pollLimit(pollAfter time.Duration) ratelimit.Limit {
	return ratelimit.Limit{Rate: 1, Per: max(pollAfter/pollSlack, time.Millisecond), Burst: pollBurst}
}
