package login

import (
	"errors"
	"time"
)

// The errors of a login that did not succeed, beyond the typed ones below.
var (
	// ErrInvalidCredentials: the login id is unknown or the password wrong
	// (the two are not told apart).
	ErrInvalidCredentials = errors.New("login: invalid credentials")
	// ErrBusy: every BCrypt slot stayed taken for the wait, or the caller
	// went away while waiting; nothing was verified.
	ErrBusy = errors.New("login: every BCrypt slot is busy")
)

// RefusedError is an attempt refused by the login limit named Limit (one
// of the Limit* names) before BCrypt; RetryAfter is the exact wait until
// it would be allowed.
type RefusedError struct {
	Limit      string
	RetryAfter time.Duration
}

func (e *RefusedError) Error() string {
	return "login: refused by " + e.Limit + ", retry after " + e.RetryAfter.String()
}

// LimiterError: the login limits could not be decided (Redis); they fail
// closed. Err is the limiter's error.
type LimiterError struct{ Err error }

func (e *LimiterError) Error() string { return e.Err.Error() }
func (e *LimiterError) Unwrap() error { return e.Err }

// StoreError: the credentials could not be read. Err is the store's error,
// for the caller to answer by its kind.
type StoreError struct{ Err error }

func (e *StoreError) Error() string { return e.Err.Error() }
func (e *StoreError) Unwrap() error { return e.Err }
