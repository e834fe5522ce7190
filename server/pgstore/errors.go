package pgstore

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// Business outcomes are sentinel errors (ErrUserNotFound, ErrProductNotFound,
// ErrOutOfStock, ErrInvalidQuantity), tested with errors.Is. A value the
// database refuses (SQLSTATE class 22: invalid encoding, out of range, wrong
// format) is an *InputError matching ErrInvalidInput: the caller's input at
// fault, mapped from the SQLSTATE in one place (mapErr). Every other error
// is an infrastructure failure (pool exhausted past the context deadline,
// connection refused or lost, statement timeout) and is returned wrapped, never
// as a sentinel, so a caller can tell "the order was refused" from "the
// database could not answer" — the latter is safe to retry.

// ErrInvalidInput is a value the database refused (SQLSTATE class 22, data
// exception: an invalid byte sequence such as NUL, a number out of range, a
// value in the wrong format). It is the caller's input at fault, not an
// outage: answer 400, never 503 (a client told to retry would retry
// forever, and anyone could raise 5xx alerts at will). Errors of this kind
// are *InputError values, which match ErrInvalidInput with errors.Is.
var ErrInvalidInput = errors.New("pgstore: invalid input")

// InputError is a data exception, with a reason fit to show the client: it
// names the kind of fault and never quotes the refused value.
type InputError struct {
	Code   string // the SQLSTATE, e.g. "22021"
	Reason string
	err    error
}

func (e *InputError) Error() string {
	return "pgstore: the database refused a value (SQLSTATE " + e.Code + "): " + e.Reason
}

// Is makes an InputError match ErrInvalidInput.
func (e *InputError) Is(target error) bool { return target == ErrInvalidInput }

func (e *InputError) Unwrap() error { return e.err }

// dataReasons names the data exceptions a request can cause.
var dataReasons = map[string]string{
	"22021": "invalid character encoding (e.g. a NUL byte)",
	"22P05": "a character the database cannot store",
	"22003": "a number out of range",
	"22P02": "a value in the wrong format",
	"22001": "a value too long",
	"22007": "an invalid date or time",
	"22008": "a date or time out of range",
	"22012": "a division by zero",
}

// mapErr is the one place where driver errors become this package's: a data
// exception (SQLSTATE class 22) becomes an *InputError; anything else —
// connectivity, timeouts, the pool — stays an infrastructure failure,
// wrapped with op. Decided by the SQLSTATE, never the message.
func mapErr(op string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && len(pgErr.Code) == 5 && pgErr.Code[:2] == "22" {
		reason, ok := dataReasons[pgErr.Code]
		if !ok {
			reason = "a value the database cannot accept"
		}
		return &InputError{Code: pgErr.Code, Reason: reason, err: err}
	}
	return fmt.Errorf("pgstore: %s: %w", op, err)
}
