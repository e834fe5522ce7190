package login_test

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"waitingroom/queue/queuetest"
	"waitingroom/server/login"
	"waitingroom/server/pgstore"
	"waitingroom/server/pgstore/pgtest"
	"waitingroom/server/ratelimit"
)

// fixture is a Login on the real Redis and a fresh Postgres database with
// users user1 and user2, both with the password "right".
type fixture struct {
	l        *login.Login
	store    *pgstore.Store
	verifies int
}

func newFixture(t *testing.T, cfg login.Config) *fixture {
	t.Helper()
	rdb, prefix := queuetest.Redis(t)
	store, err := pgstore.Open(t.Context(), pgtest.URL(t), pgstore.Options{PoolSize: 2})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(store.Close)
	hash, _ := bcrypt.GenerateFromPassword([]byte("right"), bcrypt.MinCost)
	if _, err := store.Seed(t.Context(), pgstore.SeedOptions{Users: 2, PasswordHash: hash}); err != nil {
		t.Fatalf("Seed: %v", err)
	}
	f := &fixture{store: store}
	cfg.BcryptCost = bcrypt.MinCost
	f.l = login.New(login.Options{Config: cfg, Store: store, Limiter: ratelimit.New(rdb, prefix),
		OnVerify: func(time.Duration) { f.verifies++ }})
	return f
}

// defaults are the login limits' defaults.
var defaults = login.Config{
	AttemptsIP: ratelimit.Limit{Rate: 120, Per: time.Minute, Burst: 60},
	IP:         ratelimit.Limit{Rate: 10, Per: time.Minute, Burst: 10},
	Pair:       ratelimit.Limit{Rate: 5, Per: 5 * time.Minute, Burst: 5},
	ID:         ratelimit.Limit{Rate: 10, Per: time.Minute, Burst: 5},
}

func (f *fixture) verify(t *testing.T, id, password, addr string) (int64, error) {
	t.Helper()
	return f.l.Verify(t.Context(), login.Attempt{LoginID: id, Password: password, Address: addr, Limited: true})
}

func TestVerify(t *testing.T) {
	f := newFixture(t, defaults)
	if id, err := f.verify(t, "user1", "right", "a"); err != nil || id == 0 {
		t.Fatalf("right password: %d, %v", id, err)
	}
	if _, err := f.verify(t, "user1", "wrong", "a"); !errors.Is(err, login.ErrInvalidCredentials) {
		t.Fatalf("wrong password: %v", err)
	}
	if _, err := f.verify(t, "nobody", "right", "a"); !errors.Is(err, login.ErrInvalidCredentials) {
		t.Fatalf("unknown id: %v", err)
	}
	if f.verifies != 3 {
		t.Fatalf("BCrypt ran %d times, want 3 (the unknown id against the dummy hash)", f.verifies)
	}
	f.store.Close()
	var se *login.StoreError
	if _, err := f.verify(t, "user1", "right", "a"); !errors.As(err, &se) {
		t.Fatalf("store closed: %v, want a *login.StoreError", err)
	}
}

// TestLimits: the pair's failures refuse the address on that account and
// no other; login_id, exhausted, refuses only an address that has been
// failing on the account, never its owner from elsewhere.
func TestLimits(t *testing.T) {
	slow := ratelimit.Limit{Rate: 1, Per: time.Hour, Burst: 2}
	wide := ratelimit.Limit{Rate: 100, Per: time.Minute, Burst: 100}
	f := newFixture(t, login.Config{AttemptsIP: wide, IP: wide, Pair: slow, ID: slow})
	for range 2 {
		if _, err := f.verify(t, "user1", "wrong", "a"); !errors.Is(err, login.ErrInvalidCredentials) {
			t.Fatalf("guess: %v", err)
		}
	}
	var re *login.RefusedError
	if _, err := f.verify(t, "user1", "right", "a"); !errors.As(err, &re) || re.Limit != login.LimitPair || re.RetryAfter <= 0 {
		t.Fatalf("third try from a: %v, want refused by %s", err, login.LimitPair)
	}
	if _, err := f.verify(t, "user1", "wrong", "b"); !errors.Is(err, login.ErrInvalidCredentials) {
		t.Fatalf("first guess from b: %v", err)
	}
	// login_id is exhausted and b is now in debt on user1.
	if _, err := f.verify(t, "user1", "right", "b"); !errors.As(err, &re) || re.Limit != login.LimitID {
		t.Fatalf("b again: %v, want refused by %s", err, login.LimitID)
	}
	if id, err := f.verify(t, "user1", "right", "c"); err != nil || id == 0 {
		t.Fatalf("the owner from c: %d, %v", id, err)
	}
	if _, err := f.verify(t, "user2", "right", "a"); err != nil {
		t.Fatalf("a on another account: %v", err)
	}
	unlimited := login.Attempt{LoginID: "user1", Password: "right", Address: "a"}
	if _, err := f.l.Verify(t.Context(), unlimited); err != nil {
		t.Fatalf("limits off: %v", err)
	}
}

func TestLimiterDownFailsClosed(t *testing.T) {
	f := newFixture(t, defaults)
	rdb, prefix := queuetest.Redis(t)
	_ = rdb.Close()
	l := login.New(login.Options{Config: defaults, Store: f.store, Limiter: ratelimit.New(rdb, prefix)})
	var le *login.LimiterError
	_, err := l.Verify(t.Context(), login.Attempt{LoginID: "user1", Password: "right", Address: "a", Limited: true})
	if !errors.As(err, &le) || !errors.Is(err, ratelimit.ErrUnavailable) {
		t.Fatalf("limiter down: %v, want a *login.LimiterError", err)
	}
}
