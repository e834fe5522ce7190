package pgstore_test

import (
	"errors"
	"testing"

	"waitingroom/server/pgstore"
)

func TestCredentials(t *testing.T) {
	t.Parallel()
	s := newStore(t, pgstore.Options{})
	mustSeed(t, s.Store, pgstore.SeedOptions{Users: 3, PasswordHash: []byte("$2a$10$hash")})

	id1, hash, err := s.Credentials(t.Context(), "user1")
	if err != nil {
		t.Fatalf("Credentials(user1): %v", err)
	}
	if got, want := string(hash), "$2a$10$hash"; got != want {
		t.Errorf("hash = %q, want %q", got, want)
	}
	id2 := mustUserID(t, s.Store, "user2")
	if id1 <= 0 || id2 <= 0 || id1 == id2 {
		t.Errorf("user ids = %d, %d; want two distinct positive ids", id1, id2)
	}
	// The caller runs BCrypt after Credentials returns; it must not hold a
	// connection meanwhile.
	if got := poolGauge(t, s.reg, "acquired"); got != 0 {
		t.Errorf(`pool_connections{state="acquired"} = %v after Credentials returned, want 0`, got)
	}

	for _, login := range []string{"user4", "", "USER1", "user1 "} {
		if _, _, err := s.Credentials(t.Context(), login); !errors.Is(err, pgstore.ErrUserNotFound) {
			t.Errorf("Credentials(%q) error = %v, want ErrUserNotFound", login, err)
		}
	}
}
