package checkout

import "errors"

// The errors of an order that was not placed, beyond the queue's and the
// store's own sentinels (returned as they are).
var (
	// ErrNoEntryToken: the request carried no entry token.
	ErrNoEntryToken = errors.New("checkout: no entry token")
	// ErrUnavailable: an infrastructure failure; the entry token was given
	// back, so the same order can be retried.
	ErrUnavailable = errors.New("checkout: unavailable, entry token kept")
	// ErrEntryLost: an infrastructure failure, and the entry token could
	// not be given back: the user must enter again.
	ErrEntryLost = errors.New("checkout: unavailable, entry token lost")
	// ErrUnknownUser: a valid token for a user the database no longer has.
	ErrUnknownUser = errors.New("checkout: unknown user")
)

// RefusedError is an order the database refused for a business reason
// other than the named ones (e.g. pgstore.ErrInvalidQuantity).
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return "checkout: refused: " + e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// StoreError is a store error met before or instead of a business answer:
// a value the database refused (a *pgstore.InputError), or a failure to
// reach it at the product check. The caller answers it by its kind.
type StoreError struct{ Err error }

func (e *StoreError) Error() string { return e.Err.Error() }
func (e *StoreError) Unwrap() error { return e.Err }
