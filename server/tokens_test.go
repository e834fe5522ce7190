package server_test

import (
	"errors"
	"testing"
	"time"

	"waitingroom/server"
)

func TestTokenKindsAreKeptApart(t *testing.T) {
	tk := server.NewTokens(testSecret, "")
	access, _ := tk.IssueAccess("7", time.Hour)
	queue, _ := tk.IssueQueue("7", "default", 42, time.Hour)
	if c, err := tk.Parse(access, server.KindAccess); err != nil || c.Subject != "7" {
		t.Fatalf("access = %+v, %v", c, err)
	}
	if c, err := tk.Parse(queue, server.KindQueue); err != nil || c.Room != "default" || c.Seq != 42 {
		t.Fatalf("queue = %+v, %v", c, err)
	}
	if _, err := tk.Parse(access, server.KindQueue); !errors.Is(err, server.ErrTokenInvalid) {
		t.Fatalf("access accepted as queue token: %v", err)
	}
	if _, err := tk.Parse(queue, server.KindAccess); !errors.Is(err, server.ErrTokenInvalid) {
		t.Fatalf("queue accepted as access token: %v", err)
	}
}

func TestTokenKeyRotation(t *testing.T) {
	const old, next = "old-secret-old-secret-old-secret-0000", "new-secret-new-secret-new-secret-0000"
	before := server.NewTokens(old, "")
	tok, _ := before.IssueQueue("7", "default", 1, time.Hour)
	during := server.NewTokens(next, old)
	if _, err := during.Parse(tok, server.KindQueue); err != nil {
		t.Fatalf("a token of the previous key is refused during rotation: %v", err)
	}
	after := server.NewTokens(next, "")
	if _, err := after.Parse(tok, server.KindQueue); !errors.Is(err, server.ErrTokenInvalid) {
		t.Fatalf("a token of a retired key is accepted: %v", err)
	}
	fresh, _ := during.IssueQueue("7", "default", 1, time.Hour)
	if _, err := after.Parse(fresh, server.KindQueue); err != nil {
		t.Fatalf("a token of the new key: %v", err)
	}
}
