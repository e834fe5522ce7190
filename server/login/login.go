package login

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"waitingroom/server/pgstore"
	"waitingroom/server/ratelimit"
)

// bcryptWait is how long a login waits for a BCrypt slot before it gets
// ErrBusy.
const bcryptWait = 2 * time.Second

// Config holds the login settings.
type Config struct {
	BcryptCost int // the dummy hash's cost
	// BcryptConcurrency is how many BCrypt
	// verifications run at once; 0: half the cores, at least 1.
	BcryptConcurrency int
	// The four login limits (see the package doc).
	AttemptsIP ratelimit.Limit // login_attempts_ip
	IP         ratelimit.Limit // login_ip
	Pair       ratelimit.Limit // login_pair
	ID         ratelimit.Limit // login_id
}

// Store is what a login needs from Postgres (pgstore.Store): an unknown
// login id is pgstore.ErrUserNotFound.
type Store interface {
	Credentials(ctx context.Context, loginID string) (userID int64, passwordHash []byte, err error)
}

// Options are the dependencies of a Login.
type Options struct {
	Config  Config
	Store   Store
	Limiter *ratelimit.Limiter
	Logger  *slog.Logger
	// OnVerify, when set, observes each BCrypt verification's duration.
	OnVerify func(time.Duration)
	// OnBusy, when set, counts each login that found no BCrypt slot free
	// within the wait.
	OnBusy func()
}

// Login verifies login attempts.
type Login struct {
	o     Options
	slots chan struct{} // one token per concurrent BCrypt

	dummyOnce sync.Once
	dummyHash []byte // BCrypt hash verified for unknown login ids
}

// New returns a Login.
func New(o Options) *Login {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.OnVerify == nil {
		o.OnVerify = func(time.Duration) {}
	}
	if o.OnBusy == nil {
		o.OnBusy = func() {}
	}
	if o.Config.BcryptConcurrency <= 0 {
		o.Config.BcryptConcurrency = max(runtime.GOMAXPROCS(0)/2, 1)
	}
	return &Login{o: o, slots: make(chan struct{}, o.Config.BcryptConcurrency)}
}

// Attempt is one login attempt, its shape validated by the caller.
type Attempt struct {
	LoginID, Password string
	// Address is the client's address key (listener.AddrKey): what the
	// per-address limits count by.
	Address string
	// Limited applies the login limits; false when the limits are off or
	// the address is exempt.
	Limited bool
}

// Verify checks an attempt (see the package doc for the steps) and
// returns the user id of a correct one.
func (l *Login) Verify(ctx context.Context, a Attempt) (userID int64, err error) {
	var settle func(failed bool)
	if a.Limited {
		if settle, err = l.gate(ctx, a.LoginID, a.Address); err != nil {
			return 0, err
		}
	}
	ok, id, err := l.checkPassword(ctx, a.LoginID, a.Password)
	if settle != nil {
		// No verdict (the database could not answer) is not a failure:
		// nothing was verified, nothing learnt.
		settle(err == nil && !ok)
	}
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, ErrInvalidCredentials
	}
	return id, nil
}

// checkPassword reads the user's credentials and verifies password, against
// a dummy hash when the login id is unknown (same time either way).
func (l *Login) checkPassword(ctx context.Context, loginID, password string) (ok bool, id int64, err error) {
	id, hash, err := l.o.Store.Credentials(ctx, loginID)
	switch {
	case errors.Is(err, pgstore.ErrUserNotFound):
		_, err := l.verifyPassword(ctx, l.dummy(), password)
		return false, 0, err
	case err != nil:
		return false, 0, &StoreError{Err: err}
	}
	ok, err = l.verifyPassword(ctx, hash, password)
	return ok, id, err
}

// verifyPassword runs one BCrypt verification in one of the slots, or
// returns ErrBusy when none is free within bcryptWait.
func (l *Login) verifyPassword(ctx context.Context, hash []byte, password string) (bool, error) {
	wait := time.NewTimer(bcryptWait)
	defer wait.Stop()
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		return false, ErrBusy
	case <-wait.C:
		l.o.OnBusy()
		return false, ErrBusy
	}
	defer func() { <-l.slots }()
	start := time.Now()
	err := bcrypt.CompareHashAndPassword(hash, []byte(password))
	l.o.OnVerify(time.Since(start))
	return err == nil, nil
}

// dummy returns a hash of the configured cost, made once.
func (l *Login) dummy() []byte {
	l.dummyOnce.Do(func() {
		l.dummyHash, _ = bcrypt.GenerateFromPassword([]byte("not a password of anyone"), l.o.Config.BcryptCost)
	})
	return l.dummyHash
}
