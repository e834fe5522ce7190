package token

import (
	"crypto/subtle"
	"encoding/base64"
	"hash"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// verifyOwn verifies, without golang-jwt's generic decoding, a token in
// exactly the form this package signs: the header segment of one of its
// keys (so HS256 and a known kid), a payload that is byte for byte what
// appendClaims writes for the claims it holds, and that key's HMAC as the
// signature, in canonical base64. Those claims can only have been signed
// here, so they are checked as the parser checks them (issuer, audience,
// subject, an expiry not passed and iat not ahead by more than the
// leeway; Parse then refuses an expiry passed at all). Anything else — another form, a bad
// signature, a failed check — returns false, and the caller verifies the
// token in full with golang-jwt, which then accepts or names the refusal.
// So this path accepts a subset of what the parser accepts, with the same
// claims (TestVerifyOwnAgreesWithTheParser); it exists because a fresh
// enter verifies one access token, and the generic decoding was a quarter
// of an enter's CPU.
func (t *Issuer) verifyOwn(raw string) (*Claims, bool) {
	dot := strings.IndexByte(raw, '.')
	last := strings.LastIndexByte(raw, '.')
	if dot < 0 || last <= dot {
		return nil, false
	}
	s := t.byHead[raw[:dot+1]]
	if s == nil || !s.signed(raw[:last], raw[last+1:]) {
		return nil, false
	}
	var scratch [256]byte
	payload, err := base64.RawURLEncoding.AppendDecode(scratch[:0], []byte(raw[dot+1:last]))
	if err != nil {
		return nil, false
	}
	c, ok := parseOwnClaims(payload)
	if !ok {
		return nil, false
	}
	if again, ok := appendClaims(scratch[len(payload):len(payload)], c); !ok || string(again) != string(payload) {
		return nil, false
	}
	if c.Issuer != tokenIssuer || !slices.Contains(c.Audience, tokenAudience) || c.Subject == "" || c.ExpiresAt == nil {
		return nil, false
	}
	now := t.now()
	if !now.Before(c.ExpiresAt.Add(leeway)) || (c.IssuedAt != nil && c.IssuedAt.After(now.Add(leeway))) {
		return nil, false
	}
	return c, true
}

// signed reports whether sig is the canonical base64 of this key's HMAC of
// signing (compared in constant time).
func (s *signer) signed(signing, sig string) bool {
	mac := s.macs.Get().(hash.Hash)
	mac.Reset()
	mac.Write([]byte(signing))
	var sum [32]byte
	var enc [43]byte
	base64.RawURLEncoding.Encode(enc[:], mac.Sum(sum[:0]))
	s.macs.Put(mac)
	return len(sig) == len(enc) && subtle.ConstantTimeCompare(enc[:], []byte(sig)) == 1
}

// parseOwnClaims reads a flat JSON object of the claims' names with
// string, integer and string-array values and no escapes; false for
// anything else. It need not be strict: verifyOwn keeps the claims only if
// writing them again gives the same bytes.
func parseOwnClaims(b []byte) (*Claims, bool) {
	p := ownParser{b: b}
	c := &Claims{}
	if !p.eat('{') {
		return nil, false
	}
	for first := true; !p.eat('}'); first = false {
		if (!first && !p.eat(',')) || !p.eat('"') {
			return nil, false
		}
		name, ok := p.until('"')
		if !ok || !p.eat(':') {
			return nil, false
		}
		if !p.field(c, name) {
			return nil, false
		}
	}
	return c, p.i == len(b)
}

// ownParser is parseOwnClaims's cursor.
type ownParser struct {
	b []byte
	i int
}

func (p *ownParser) eat(ch byte) bool {
	if p.i < len(p.b) && p.b[p.i] == ch {
		p.i++
		return true
	}
	return false
}

// until returns the bytes up to ch (consumed); false at a backslash or
// the end.
func (p *ownParser) until(ch byte) (string, bool) {
	for j := p.i; j < len(p.b); j++ {
		switch p.b[j] {
		case ch:
			s := string(p.b[p.i:j])
			p.i = j + 1
			return s, true
		case '\\':
			return "", false
		}
	}
	return "", false
}

func (p *ownParser) str() (string, bool) {
	if !p.eat('"') {
		return "", false
	}
	return p.until('"')
}

func (p *ownParser) int() (int64, bool) {
	j := p.i
	for j < len(p.b) && (p.b[j] == '-' || (p.b[j] >= '0' && p.b[j] <= '9')) {
		j++
	}
	n, err := strconv.ParseInt(string(p.b[p.i:j]), 10, 64)
	p.i = j
	return n, err == nil
}

func (p *ownParser) field(c *Claims, name string) bool {
	var ok bool
	date := func() *jwt.NumericDate {
		var n int64
		if n, ok = p.int(); !ok {
			return nil
		}
		return jwt.NewNumericDate(time.Unix(n, 0))
	}
	switch name {
	case "iss":
		c.Issuer, ok = p.str()
	case "sub":
		c.Subject, ok = p.str()
	case "jti":
		c.ID, ok = p.str()
	case "kind":
		c.Kind, ok = p.str()
	case "room":
		c.Room, ok = p.str()
	case "seq":
		c.Seq, ok = p.int()
	case "exp":
		c.ExpiresAt = date()
	case "iat":
		c.IssuedAt = date()
	case "aud":
		if !p.eat('[') {
			return false
		}
		for first := true; !p.eat(']'); first = false {
			if !first && !p.eat(',') {
				return false
			}
			a, ok := p.str()
			if !ok {
				return false
			}
			c.Audience = append(c.Audience, a)
		}
		return true
	}
	return ok
}
