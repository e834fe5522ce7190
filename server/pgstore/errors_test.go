package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"waitingroom/server/pgstore"
)

// TestDataErrorsAreInvalidInput: values Postgres refuses (a NUL byte, bad
// UTF-8) are ErrInvalidInput with a reason that does not quote them, and
// not infrastructure failures; a database that cannot be reached is not
// ErrInvalidInput.
func TestDataErrorsAreInvalidInput(t *testing.T) {
	t.Parallel()
	s := newStore(t, pgstore.Options{})
	mustSeed(t, s.Store, pgstore.SeedOptions{Users: 1, PasswordHash: []byte("$2a$10$hash"), Products: 1, Stock: 5})
	uid := mustUserID(t, s.Store, "user1")
	for name, call := range map[string]func() error{
		"credentials with NUL": func() error { _, _, err := s.Credentials(t.Context(), "user\x00one"); return err },
		"credentials with bad UTF-8": func() error {
			_, _, err := s.Credentials(t.Context(), "user\xff\xfe")
			return err
		},
		"order with NUL in room": func() error {
			_, err := s.PlaceOrder(t.Context(), pgstore.OrderRequest{UserID: uid, ProductID: 1, Quantity: 1, Room: "ro\x00om"})
			return err
		},
	} {
		err := call()
		var ie *pgstore.InputError
		if !errors.Is(err, pgstore.ErrInvalidInput) || !errors.As(err, &ie) || ie.Reason == "" {
			t.Errorf("%s: error %v, want an InputError", name, err)
			continue
		}
		if !pgstore.IsOutcome(err) || strings.Contains(ie.Error(), "\x00") || strings.Contains(ie.Reason, "user") {
			t.Errorf("%s: %q is not an outcome or quotes the value", name, ie.Error())
		}
	}
	if got := mustStock(t, s.Store, 1); got != 5 {
		t.Errorf("stock = %d after refused orders, want 5", got)
	}

	// A database that cannot be reached is an outage, not bad input.
	s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, _, err := s.Credentials(ctx, "user\x00one"); err == nil || errors.Is(err, pgstore.ErrInvalidInput) || pgstore.IsOutcome(err) {
		t.Errorf("closed store: error %v, want an infrastructure failure", err)
	}
}
