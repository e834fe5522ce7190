package admin

import (
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"waitingroom/server/api"
	"waitingroom/server/seclog"
)

// Failed admin authentication is throttled per client address (ClientKey):
// failBurst failures at once, then one per failEvery; past that the
// address gets 429 before its token is even compared — also a correct
// one, or the throttle would not stop guessing — until its allowance
// returns. Only failures count.
//
// The state is in this instance's memory, not Redis: the management port
// listens on loopback or an operator network by default, its clients are
// few, and the admin API must keep answering while Redis is down. With a
// 16-byte random token, 10 guesses a minute is no threat.
const (
	failBurst = 10
	failEvery = 6 * time.Second // 10 a minute
	// failAddrs bounds the addresses tracked; past it, addresses whose
	// debt is paid are forgotten (and, should all still be in debt, every
	// address: the bound on memory wins over the throttle).
	failAddrs = 10_000
)

// throttle is an in-memory GCRA per address over failures only.
type throttle struct {
	mu  sync.Mutex
	tat map[string]time.Time // theoretical arrival time per address
}

// refused reports whether addr must wait before another attempt, and how long.
func (t *throttle) refused(addr string, now time.Time) (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	allowAt := t.tat[addr].Add(failEvery - failBurst*failEvery)
	if now.Before(allowAt) {
		return allowAt.Sub(now), true
	}
	return 0, false
}

// fail records one failure of addr.
func (t *throttle) fail(addr string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tat == nil {
		t.tat = map[string]time.Time{}
	}
	if len(t.tat) >= failAddrs {
		for k, at := range t.tat {
			if !at.After(now) {
				delete(t.tat, k)
			}
		}
		if len(t.tat) >= failAddrs {
			clear(t.tat)
		}
	}
	at := t.tat[addr]
	if at.Before(now) {
		at = now
	}
	t.tat[addr] = at.Add(failEvery)
}

// throttled refuses an address past its allowance of failures.
func (a *app) throttled(c *fiber.Ctx) error {
	wait, refused := a.fails.refused(a.ClientKey(c), time.Now())
	if !refused {
		return nil
	}
	a.Sec.Event(c.UserContext(), seclog.AdminThrottled, slog.String("address", a.ClientIP(c)), slog.String("path", seclog.Value(c.Path())))
	secs := int(math.Ceil(wait.Seconds()))
	return &api.Error{Status: fiber.StatusTooManyRequests, Code: "rate_limited", RetryAfter: secs,
		Message: "too many failed admin authentications from this address; retry after " + strconv.Itoa(secs) + " s"}
}

// failed records one failed admin authentication.
func (a *app) failed(c *fiber.Ctx, tokenSent bool) {
	a.fails.fail(a.ClientKey(c), time.Now())
	a.Sec.Event(c.UserContext(), seclog.AdminAuth, slog.String("address", a.ClientIP(c)),
		slog.Bool("token_sent", tokenSent), slog.String("path", seclog.Value(c.Path())))
}
