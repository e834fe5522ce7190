package token

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestSignMatchesTheLibrary: every token this package signs is byte for
// byte the one golang-jwt signs for the same claims — the hand-written
// claims for the shapes issued, and encoding/json's for any other.
func TestSignMatchesTheLibrary(t *testing.T) {
	tk := New(Config{Secret: "test-secret-test-secret-test-secret-0123"})
	at := time.Unix(1_790_000_000, 123_456_789)
	base := tk.claims(KindQueue, "7", time.Hour)
	cases := map[string]func(c *Claims){
		"access":    func(c *Claims) { c.Kind, c.Room, c.Seq = KindAccess, "", 0 },
		"queue":     func(c *Claims) { c.Room, c.Seq = "default", 42 },
		"session":   func(c *Claims) { c.Kind, c.Room, c.ID = KindSession, "sale-1", "p-abc_DEF" },
		"no expiry": func(c *Claims) { c.ExpiresAt = nil },
		"fractional": func(c *Claims) {
			c.IssuedAt, c.ExpiresAt = jwt.NewNumericDate(at), jwt.NewNumericDate(at.Add(time.Hour))
		},
		"negative seq":   func(c *Claims) { c.Seq = -3 },
		"escaped user":   func(c *Claims) { c.Subject = `a"b\c<d>&é` },
		"control in jti": func(c *Claims) { c.ID = "x\ny" },
		"escaped room":   func(c *Claims) { c.Room = "<room>" },
		"two audiences":  func(c *Claims) { c.Audience = jwt.ClaimStrings{"a", "b"} },
		"odd audience":   func(c *Claims) { c.Audience = jwt.ClaimStrings{"a&b"} },
		"not before":     func(c *Claims) { c.NotBefore = jwt.NewNumericDate(at) },
		"empty kind":     func(c *Claims) { c.Kind = "" },
		"empty subject":  func(c *Claims) { c.Subject, c.Issuer = "", "" },
	}
	for name, change := range cases {
		c := base
		change(&c)
		want := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
		want.Header["kid"] = tk.kid
		wantS, err := want.SignedString(tk.keys[tk.kid])
		if err != nil {
			t.Fatal(err)
		}
		got, err := tk.sign(c)
		if err != nil || got != wantS {
			t.Errorf("%s:\n got %s, %v\nwant %s", name, got, err, wantS)
		}
	}
}

func BenchmarkSign(b *testing.B) {
	tk := New(Config{Secret: "test-secret-test-secret-test-secret-0123"})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tk.IssueQueue("123456", "default", 98765, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
}

// TestVerifyOwnAgreesWithTheParser: the direct path accepts every token
// this package issues, and whatever it accepts golang-jwt's parser accepts
// with the same claims; tokens of other forms, keys, or failing a check
// are left to the parser.
func TestVerifyOwnAgreesWithTheParser(t *testing.T) {
	const secret, previous = "test-secret-test-secret-test-secret-0123", "old-secret-old-secret-old-secret-0000"
	tk := New(Config{Secret: secret, Previous: previous})
	old := New(Config{Secret: previous})
	other := New(Config{Secret: "another-secret-another-secret-another-secret"})
	mine := func(tok string, _ error) string { return tok }
	issued := []string{
		mine(tk.IssueAccess("7", time.Hour)),
		mine(tk.IssueQueue("123456", "default", 98765, time.Hour)),
		mine(tk.IssueVisitor("v-abc_DEF", time.Hour)),
		mine(tk.IssueSession("7", "sale-1", "p1", time.Now(), time.Now().Add(time.Minute))),
		mine(old.IssueQueue("7", "default", 1, time.Hour)), // the previous key, during rotation
	}
	for _, raw := range issued {
		if _, ok := tk.verifyOwn(raw); !ok {
			t.Errorf("an issued token is not verified directly: %s", raw)
		}
	}
	refused := []string{
		mine(other.IssueQueue("7", "default", 1, time.Hour)),                                         // unknown key
		mine(tk.IssueQueue("7", "default", 1, -time.Hour)),                                           // expired: left to the parser
		mine(tk.IssueSession("7", "r", "p", time.Now().Add(time.Hour), time.Now().Add(2*time.Hour))), // iat ahead
		flipLast(issued[1]), // signature changed
		issued[1] + "=",     // not canonical base64
	}
	odd := func(change func(c *Claims)) string {
		c := tk.claims(KindQueue, "7", time.Hour)
		change(&c)
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
		tok.Header["kid"] = tk.kid
		s, _ := tok.SignedString([]byte(secret))
		return s
	}
	refused = append(refused,
		odd(func(c *Claims) { c.Issuer = "someone" }),
		odd(func(c *Claims) { c.Audience = jwt.ClaimStrings{"other"} }),
		odd(func(c *Claims) { c.Subject = "" }),
		odd(func(c *Claims) { c.ExpiresAt = nil }),
		odd(func(c *Claims) { c.Subject = "a<b" }),                            // escaped by JSON: the parser's
		odd(func(c *Claims) { c.NotBefore = jwt.NewNumericDate(time.Now()) }), // a shape never issued
	)
	for _, raw := range refused {
		if _, ok := tk.verifyOwn(raw); ok {
			t.Errorf("verified directly, want the parser: %s", raw)
		}
	}
	for _, raw := range append(issued, refused...) {
		agree(t, tk, raw)
	}
}

// agree fails when verifyOwn accepts raw and the parser does not, or
// with other claims.
func agree(t *testing.T, tk *Issuer, raw string) {
	t.Helper()
	own, ok := tk.verifyOwn(raw)
	if !ok {
		return
	}
	full, err := tk.verifyFull(raw)
	if err != nil {
		t.Fatalf("verified directly, refused by the parser (%v): %s", err, raw)
	}
	a, _ := json.Marshal(own)
	b, _ := json.Marshal(full)
	if string(a) != string(b) || !own.ExpiresAt.Equal(full.ExpiresAt.Time) {
		t.Fatalf("claims differ:\n own %s\nfull %s", a, b)
	}
}

// FuzzVerifyOwn: nothing the direct path accepts is refused by the
// parser. `go test -run '^$' -fuzz FuzzVerifyOwn ./server/token/`.
func FuzzVerifyOwn(f *testing.F) {
	tk := New(Config{Secret: "fuzz-secret-fuzz-secret-fuzz-secret-0"})
	good, _ := tk.IssueQueue("7", "default", 3, time.Hour)
	access, _ := tk.IssueAccess("12345", time.Hour)
	for _, s := range []string{good, access, good[:len(good)-3], "a.b.c", "", "....", tk.signer.head + "e30."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) { agree(t, tk, raw) })
}

// flipLast changes raw's last character.
func flipLast(raw string) string {
	last := byte('A')
	if raw[len(raw)-1] == last {
		last = 'B'
	}
	return raw[:len(raw)-1] + string(last)
}
