package token_test

import (
	"errors"
	"testing"
	"time"

	"waitingroom/server/token"
)

// The seed corpus runs with every `go test`; fuzz with
// `go test -run '^$' -fuzz FuzzParseToken ./server/token/`.

func FuzzParseToken(f *testing.F) {
	tk := token.New(token.Config{Secret: "fuzz-secret-fuzz-secret-fuzz-secret-0"})
	good, _ := tk.IssueQueue("7", "default", 3, time.Hour)
	for _, s := range []string{good, good[:len(good)-3], "a.b.c", "", "....", "eyJhbGciOiJub25lIn0.e30."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := tk.Parse(raw, token.KindQueue)
		if err == nil && (c.Subject == "" || c.Room == "" || c.Kind != token.KindQueue) {
			t.Fatalf("accepted %q with claims %+v", raw, c)
		}
		if err != nil && !errors.Is(err, token.ErrInvalid) {
			t.Fatalf("error %v is not ErrInvalid", err)
		}
	})
}
