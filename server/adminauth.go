package server

import (
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"waitingroom/server/api"
	"waitingroom/server/seclog"

	"github.com/gofiber/fiber/v2"
)

// Failed admin authentication is throttled per client address (clientKey):
// adminFailBurst failures at once, then one per adminFailEvery; past that
// the address gets 429 before its token is even compared — also a correct
// one, or the throttle would not stop guessing — until its allowance
// returns. Only failures count.
//
// The state is in this instance's memory, not Redis: the management port
// listens on loopback or an operator network by default (WR_ADMIN_ADDR),
// its clients are few, and the admin API must keep answering while Redis is
// down. With a 16-byte random token, 10 guesses a minute is no threat.
const (
	adminFailBurst = 10
	adminFailEvery = 6 * time.Second // 10 a minute
	// adminFailAddrs bounds the addresses tracked; past it, addresses whose
	// debt is paid are forgotten (and, should all still be in debt, every
	// address: the bound on memory wins over the throttle).
	adminFailAddrs = 10_000
)

// adminThrottle is an in-memory GCRA per address over failures only.
type adminThrottle struct {
	mu  sync.Mutex
	tat map[string]time.Time // theoretical arrival time per address
}

// refused reports whether addr must wait before another attempt, and how long.
func (a *adminThrottle) refused(addr string, now time.Time) (time.Duration, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	allowAt := a.tat[addr].Add(adminFailEvery - adminFailBurst*adminFailEvery)
	if now.Before(allowAt) {
		return allowAt.Sub(now), true
	}
	return 0, false
}

// fail records one failure of addr.
func (a *adminThrottle) fail(addr string, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.tat == nil {
		a.tat = map[string]time.Time{}
	}
	if len(a.tat) >= adminFailAddrs {
		for k, t := range a.tat {
			if !t.After(now) {
				delete(a.tat, k)
			}
		}
		if len(a.tat) >= adminFailAddrs {
			clear(a.tat)
		}
	}
	t := a.tat[addr]
	if t.Before(now) {
		t = now
	}
	a.tat[addr] = t.Add(adminFailEvery)
}

// adminThrottled refuses an address past its allowance of failures.
func (s *Server) adminThrottled(c *fiber.Ctx) error {
	wait, refused := s.adminFail.refused(s.clientKey(c), time.Now())
	if !refused {
		return nil
	}
	s.sec.Event(c.UserContext(), seclog.AdminThrottled, slog.String("address", s.clientIP(c)), slog.String("path", seclog.Value(c.Path())))
	secs := int(math.Ceil(wait.Seconds()))
	return &api.Error{Status: fiber.StatusTooManyRequests, Code: "rate_limited", RetryAfter: secs,
		Message: "too many failed admin authentications from this address; retry after " + strconv.Itoa(secs) + " s"}
}

// adminFailed records one failed admin authentication.
func (s *Server) adminFailed(c *fiber.Ctx, tokenSent bool) {
	s.adminFail.fail(s.clientKey(c), time.Now())
	s.sec.Event(c.UserContext(), seclog.AdminAuth, slog.String("address", s.clientIP(c)),
		slog.Bool("token_sent", tokenSent), slog.String("path", seclog.Value(c.Path())))
}
