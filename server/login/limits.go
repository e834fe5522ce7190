package login

import (
	"context"
	"log/slog"
	"time"

	"waitingroom/server/ratelimit"
)

// The limits count FAILURES, so that nobody can lock a buyer out of their
// account (a soft lockout), while credential stuffing stays bounded before
// BCrypt. When Redis cannot decide, they fail closed (a *LimiterError):
// BCrypt is the CPU sink.
//
//	login_attempts_ip  Config.AttemptsIP  120/1m:60  every attempt per address: the CPU guard
//	                   against one client looping on an account it knows the password of
//	login_ip           Config.IP          10/1m:10   failures per address (any accounts)
//	login_pair         Config.Pair        5/5m:5     failures per account and address
//	login_id           Config.ID          10/1m:5    failures per account, from anywhere
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
//
// BCrypt slots (Config.BcryptConcurrency): the per-address and per-account
// limits bound what one client can make BCrypt do, but not what many
// addresses together can; the slots bound the CPU that logins can take
// from everything else — polls, enters, streams and orders keep the other
// cores whatever arrives at login.

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
