package server

import (
	"errors"
	"math"
	"net"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"waitingroom/server/ratelimit"
)

// Layer 1: who gets in. Each limit is one GCRA decision on Redis, shared by
// every instance, taken BEFORE the work it protects (BCrypt at login, a
// ticket at enter, the token at order). When Redis cannot decide, each
// limit has a policy:
//
//	login (per IP, per loginId)   fail closed: 503 — BCrypt is the CPU sink
//	enter (per IP, per user)      fail open — enter needs Redis anyway
//	poll (per user and room)      fail open — a poll is cheap
//	stream (per user and room)    fail open
//	orders (per room, per user)   fail closed: 503 — the last line before the database
//
// A refusal is 429 with the contract's JSON, Retry-After (whole seconds,
// rounded up) and a waitingroom_rate_limited_total{limit} count.

// pollSlack: a poll is refused when it comes sooner than half of the
// pollAfterMs its band asked for, beyond a burst of pollBurst (jitter,
// reloads, a second tab).
const (
	pollSlack = 2
	pollBurst = 5
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
		return errors.Join(errDBUnavailable, err)
	case r.Allowed:
		return nil
	}
	s.m.rateLimited.WithLabelValues(name).Inc()
	return &apiError{status: fiber.StatusTooManyRequests, code: "rate_limited",
		message:    "too many requests; retry after " + strconv.FormatFloat(r.RetryAfter.Seconds(), 'f', 1, 64) + " s",
		retryAfter: int(math.Ceil(r.RetryAfter.Seconds()))}
}

// pollLimit is the band's own pace: pollAfter ÷ pollSlack between polls.
func pollLimit(pollAfter time.Duration) ratelimit.Limit {
	return ratelimit.Limit{Rate: 1, Per: max(pollAfter/pollSlack, time.Millisecond), Burst: pollBurst}
}

// clientIP is the socket's peer, unless that peer is a trusted proxy
// (WR_TRUSTED_PROXIES) that names the client in WR_CLIENT_IP_HEADER.
// X-Forwarded-For from anyone else is never read.
func (s *Server) clientIP(c *fiber.Ctx) string {
	peer := c.Context().RemoteIP()
	if len(s.cfg.TrustedProxies) > 0 && s.trusted(peer) {
		if ip := net.ParseIP(c.Get(s.cfg.ClientIPHeader)); ip != nil {
			return ip.String()
		}
	}
	return peer.String()
}

func (s *Server) trusted(ip net.IP) bool {
	for _, n := range s.cfg.TrustedProxies {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}
