package api

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gofiber/fiber/v2"
)

// TestTableResolves: an *Error answers as it is, wrapped or not; a table
// row answers the errors that are its Err, the first row first; Fiber's
// errors by their status; anything else is a 500 told as unknown.
func TestTableResolves(t *testing.T) {
	errA, errB := errors.New("a"), errors.New("b")
	table := Table{
		{Err: errA, As: Error{Status: 404, Code: "a_missing", Message: "no a"}},
		{Err: errA, As: Error{Status: 500, Code: "shadowed", Message: "never"}},
		{Err: errB, As: Error{Status: 503, Code: "b_down", Message: "b is down", RetryAfter: 1}},
	}
	for _, c := range []struct {
		err   error
		want  Error
		known bool
	}{
		{fmt.Errorf("ctx: %w", errA), Error{Status: 404, Code: "a_missing", Message: "no a"}, true},
		{errors.Join(ErrUnavailable, errB), *ErrUnavailable, true},
		{fmt.Errorf("ctx: %w", errB), Error{Status: 503, Code: "b_down", Message: "b is down", RetryAfter: 1}, true},
		{fiber.ErrNotFound, Error{Status: 404, Code: "not_found", Message: "no such resource"}, true},
		{errors.New("c"), Error{Status: 500, Code: "internal", Message: "internal error"}, false},
	} {
		got, known := table.Resolve(c.err)
		if *got != c.want || known != c.known {
			t.Errorf("%v: %+v (known %v), want %+v (known %v)", c.err, *got, known, c.want, c.known)
		}
	}
	if got, known := Table(nil).Resolve(errA); got.Status != 500 || known {
		t.Errorf("an empty table resolves a domain error to %+v (known %v), want an unknown 500", *got, known)
	}
}
