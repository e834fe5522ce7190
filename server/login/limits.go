package login

import (
	"context"
	"log/slog"
	"time"

	"waitingroom/server/ratelimit"
)

// The names of the login limits: RefusedError.Limit, the rate limiter's
// keys, and what the caller reports a refusal by.
const (
	LimitAttemptsIP = "login_attempts_ip"
	LimitIP         = "login_ip"
	LimitPair       = "login_pair"
	LimitID         = "login_id"
)

// checks are the login limits applied to one attempt.
type checks struct {
	id, attempts, failures, pair ratelimit.Check
}

func (l *Login) checks(account, addr string) checks {
	c := l.o.Config
	return checks{
		id:       ratelimit.Check{Name: LimitID, Subject: account, Limit: c.ID},
		attempts: ratelimit.Check{Name: LimitAttemptsIP, Slot: addr, Limit: c.AttemptsIP},
		failures: ratelimit.Check{Name: LimitIP, Slot: addr, Limit: c.IP},
		pair:     ratelimit.Check{Name: LimitPair, Slot: addr, Subject: account, Limit: c.Pair},
	}
}

// gate applies the login limits (see the package doc) to an attempt on
// account from the address key addr, before BCrypt. It returns the
// function that settles the attempt once the password is checked.
func (l *Login) gate(ctx context.Context, account, addr string) (settle func(failed bool), err error) {
	cs := l.checks(account, addr)
	idr, err := l.o.Limiter.Peek(ctx, cs.id)
	if err != nil {
		return nil, &LimiterError{Err: err}
	}
	peeked := cs.failures
	peeked.PeekOnly = true
	taken, err := l.o.Limiter.Take(ctx, cs.attempts, peeked, cs.pair)
	if err != nil {
		return nil, &LimiterError{Err: err}
	}
	for i, name := range []string{LimitAttemptsIP, LimitIP, LimitPair} {
		if !taken[i].Allowed {
			return nil, &RefusedError{Limit: name, RetryAfter: taken[i].RetryAfter}
		}
	}
	if !idr[0].Allowed && taken[2].InDebt() {
		// The account is under attack and this address has been failing
		// on it: refused, and its reservation given back (nothing ran).
		if err := l.o.Limiter.Refund(ctx, cs.pair); err != nil {
			l.o.Logger.LogAttrs(ctx, slog.LevelWarn, "login limits: refund failed", slog.String("error", err.Error()))
		}
		return nil, &RefusedError{Limit: LimitID, RetryAfter: idr[0].RetryAfter}
	}
	return func(failed bool) { l.settle(ctx, cs, failed) }, nil
}

// settle records the attempt's verdict — failed: a wrong password (the
// pair's reservation stands, login_ip and login_id are charged); else a
// success or no verdict (the reservation is refunded).
func (l *Login) settle(ctx context.Context, cs checks, failed bool) {
	// After BCrypt: the answer is decided; settling must not be lost
	// because the client went away, nor delay the answer for long.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	var err error
	if failed {
		_, err = l.o.Limiter.Charge(sctx, cs.failures)
		if _, ierr := l.o.Limiter.Charge(sctx, cs.id); err == nil {
			err = ierr
		}
	} else {
		err = l.o.Limiter.Refund(sctx, cs.pair)
	}
	if err != nil {
		l.o.Logger.LogAttrs(ctx, slog.LevelWarn, "login limits: settling an attempt failed", slog.Bool("failed", failed), slog.String("error", err.Error()))
	}
}
