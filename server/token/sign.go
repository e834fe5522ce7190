package token

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash"
	"strconv"
	"sync"

	"github.com/golang-jwt/jwt/v5"
)

// Signing writes the token golang-jwt would write for the same claims,
// byte for byte (TestSignMatchesTheLibrary), without its per-token work
// that repeats: the header (fixed per key) is encoded once at New, the
// claims of the shapes this package issues are appended by hand instead of
// by reflection through the registered claims' JSON methods, and the
// HMAC-SHA256 state keyed with the secret is reused. Claims of another
// shape (a string that JSON would escape, a not-before date) go through
// encoding/json as before. An enter signs one token, so this is on the
// request path.

// signer holds what is fixed per signing key.
type signer struct {
	head string    // base64url(header) + "."
	macs sync.Pool // hash.Hash: HMAC-SHA256 keyed with the secret
}

func newSigner(kid string, key []byte) *signer {
	hdr, _ := json.Marshal(map[string]any{"alg": jwt.SigningMethodHS256.Alg(), "typ": "JWT", "kid": kid})
	s := &signer{head: base64.RawURLEncoding.EncodeToString(hdr) + "."}
	s.macs.New = func() any { return hmac.New(sha256.New, key) }
	return s
}

func (s *signer) sign(c *Claims) (string, error) {
	var scratch [256]byte
	payload, ok := appendClaims(scratch[:0], c)
	if !ok {
		var err error
		if payload, err = json.Marshal(c); err != nil {
			return "", fmt.Errorf("tokens: sign: %w", err)
		}
	}
	b := make([]byte, 0, len(s.head)+base64.RawURLEncoding.EncodedLen(len(payload))+1+43)
	b = append(b, s.head...)
	b = base64.RawURLEncoding.AppendEncode(b, payload)
	mac := s.macs.Get().(hash.Hash)
	mac.Reset()
	mac.Write(b)
	var sum [sha256.Size]byte
	sig := mac.Sum(sum[:0])
	s.macs.Put(mac)
	b = append(b, '.')
	b = base64.RawURLEncoding.AppendEncode(b, sig)
	return string(b), nil
}

// appendClaims appends c's JSON as encoding/json writes it (fields in
// struct order, empty ones omitted, whole-second dates), or reports false
// for a shape it does not write by hand.
func appendClaims(b []byte, c *Claims) ([]byte, bool) {
	if c.NotBefore != nil || jwt.TimePrecision != 1e9 || !jwt.MarshalSingleStringAsArray {
		return nil, false
	}
	first := true
	field := func(name string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `":`...)
	}
	str := func(name, v string) bool {
		if v == "" {
			return true
		}
		if !plainJSON(v) {
			return false
		}
		field(name)
		b = append(append(append(b, '"'), v...), '"')
		return true
	}
	date := func(name string, d *jwt.NumericDate) {
		if d != nil {
			field(name)
			b = strconv.AppendInt(b, d.Unix(), 10)
		}
	}
	b = append(b, '{')
	if !str("iss", c.Issuer) || !str("sub", c.Subject) {
		return nil, false
	}
	if len(c.Audience) > 0 {
		field("aud")
		b = append(b, '[')
		for i, a := range c.Audience {
			if !plainJSON(a) {
				return nil, false
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(append(append(b, '"'), a...), '"')
		}
		b = append(b, ']')
	}
	date("exp", c.ExpiresAt)
	date("iat", c.IssuedAt)
	if !str("jti", c.ID) {
		return nil, false
	}
	field("kind") // never omitted
	b = append(append(append(b, '"'), c.Kind...), '"')
	if !plainJSON(c.Kind) || !str("room", c.Room) {
		return nil, false
	}
	if c.Seq != 0 {
		field("seq")
		b = strconv.AppendInt(b, c.Seq, 10)
	}
	return append(b, '}'), true
}

// plainJSON reports whether encoding/json writes s as it is between
// quotes: printable ASCII without the characters it escapes.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch < 0x20 || ch >= 0x7f, ch == '"', ch == '\\', ch == '<', ch == '>', ch == '&':
			return false
		}
	}
	return true
}
