package token_test

import (
	"errors"
	"testing"
	"time"

	"waitingroom/server/token"
)

const testSecret = "test-secret-test-secret-test-secret-0123"

func TestTokenKindsAreKeptApart(t *testing.T) {
	tk := token.New(token.Config{Secret: testSecret})
	access, _ := tk.IssueAccess("7", time.Hour)
	queue, _ := tk.IssueQueue("7", "default", 42, time.Hour)
	if c, err := tk.Parse(access, token.KindAccess); err != nil || c.Subject != "7" {
		t.Fatalf("access = %+v, %v", c, err)
	}
	if c, err := tk.Parse(queue, token.KindQueue); err != nil || c.Room != "default" || c.Seq != 42 {
		t.Fatalf("queue = %+v, %v", c, err)
	}
	if _, err := tk.Parse(access, token.KindQueue); !errors.Is(err, token.ErrInvalid) {
		t.Fatalf("access accepted as queue token: %v", err)
	}
	if _, err := tk.Parse(queue, token.KindAccess); !errors.Is(err, token.ErrInvalid) {
		t.Fatalf("queue accepted as access token: %v", err)
	}
}

func TestTokenKeyRotation(t *testing.T) {
	const old, next = "old-secret-old-secret-old-secret-0000", "new-secret-new-secret-new-secret-0000"
	before := token.New(token.Config{Secret: old})
	tok, _ := before.IssueQueue("7", "default", 1, time.Hour)
	during := token.New(token.Config{Secret: next, Previous: old})
	if _, err := during.Parse(tok, token.KindQueue); err != nil {
		t.Fatalf("a token of the previous key is refused during rotation: %v", err)
	}
	after := token.New(token.Config{Secret: next})
	if _, err := after.Parse(tok, token.KindQueue); !errors.Is(err, token.ErrInvalid) {
		t.Fatalf("a token of a retired key is accepted: %v", err)
	}
	fresh, _ := during.IssueQueue("7", "default", 1, time.Hour)
	if _, err := after.Parse(fresh, token.KindQueue); err != nil {
		t.Fatalf("a token of the new key: %v", err)
	}
}

// TestReason: each way a token fails is named by its own word for the
// security log, never by the error's text.
func TestReason(t *testing.T) {
	tk := token.New(token.Config{Secret: testSecret})
	other := token.New(token.Config{Secret: "another-secret-another-secret-another-secret"})
	access, _ := tk.IssueAccess("7", time.Hour)
	expired, _ := tk.IssueQueue("7", "default", 1, -time.Minute)
	foreign, _ := other.IssueQueue("7", "default", 1, time.Hour)
	good, _ := tk.IssueQueue("7", "default", 1, time.Hour)
	for raw, want := range map[string]string{
		access:                      "wrong_kind",
		expired:                     "expired",
		foreign:                     "unknown_kid",
		"a.b.c":                     "malformed",
		good[:len(good)-4] + "AAAA": "bad_signature",
	} {
		_, err := tk.Parse(raw, token.KindQueue)
		if !errors.Is(err, token.ErrInvalid) {
			t.Fatalf("%s: %v, want ErrInvalid", want, err)
		}
		if got := token.Reason(err); got != want {
			t.Errorf("Reason: got %q, want %q (%v)", got, want, err)
		}
	}
}
