package mint

import (
	"strings"
	"testing"
	"time"

	"waitingroom/server/token"
)

const mintTestSecret = "0123456789abcdef0123456789abcdef-test"

func mustMinter(tb testing.TB, secret string) *Minter {
	tb.Helper()
	m, err := New(secret, time.Hour)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// The server's own parser is the judge of a minted token.
func TestMintedAccessTokenVerifies(t *testing.T) {
	tok, err := mustMinter(t, mintTestSecret).Access(4711)
	if err != nil {
		t.Fatal(err)
	}
	c, err := token.New(token.Config{Secret: mintTestSecret}).Parse(tok, token.KindAccess)
	if err != nil {
		t.Fatalf("server rejects the minted token: %v", err)
	}
	if got, want := c.Subject, "4711"; got != want {
		t.Errorf("sub = %q, want %q", got, want)
	}
	if _, err := token.New(token.Config{Secret: mintTestSecret}).Parse(tok, token.KindQueue); err == nil {
		t.Error("a minted access token passes as a queue token")
	}
	if _, err := token.New(token.Config{Secret: strings.ToUpper(mintTestSecret)}).Parse(tok, token.KindAccess); err == nil {
		t.Error("a token minted with another secret verifies")
	}
	// During a rotation the server also accepts the previous secret's kid.
	if _, err := token.New(token.Config{Secret: "another-secret-of-at-least-32-bytes", Previous: mintTestSecret}).Parse(tok, token.KindAccess); err != nil {
		t.Errorf("the previous secret's token is refused: %v", err)
	}
}

func TestMintRefusesShortSecret(t *testing.T) {
	for _, s := range []string{"", "short"} {
		if _, err := New(s, time.Hour); err == nil {
			t.Errorf("New(%q) accepted", s)
		}
	}
}

func TestMintedTokenExpires(t *testing.T) {
	m := mustMinter(t, mintTestSecret)
	m.now = func() time.Time { return time.Now().Add(-2 * time.Hour) } // exp an hour ago
	tok, err := m.Access(1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := token.New(token.Config{Secret: mintTestSecret}).Parse(tok, token.KindAccess); err == nil {
		t.Error("an expired minted token verifies")
	}
}
