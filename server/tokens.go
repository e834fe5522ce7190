package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Token kinds: an access token (from login) is refused where a queue token
// is required, and vice versa.
const (
	KindAccess = "access"
	KindQueue  = "queue"
)

const (
	tokenIssuer   = "waitingroom"
	tokenAudience = "waitingroom"
)

// ErrTokenInvalid is any token that fails verification; the reason goes to
// the log, never to the client.
var ErrTokenInvalid = errors.New("token invalid")

// Claims are the claims of both token kinds.
type Claims struct {
	jwt.RegisteredClaims
	Kind string `json:"kind"`
	Room string `json:"room,omitempty"`
	// Seq is the ticket number (queue tokens of waiting users).
	Seq int64 `json:"seq,omitempty"`
}

// Tokens issues and verifies HS256 JWTs. Each key carries a kid derived
// from the secret; the previous secret stays valid for verification while
// clients holding its tokens age out (rotation).
type Tokens struct {
	kid    string
	keys   map[string][]byte
	parser *jwt.Parser
	now    func() time.Time
}

func keyID(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:4])
}

// NewTokens returns Tokens signing with secret and also accepting previous
// (may be empty).
func NewTokens(secret, previous string) *Tokens {
	t := &Tokens{kid: keyID(secret), keys: map[string][]byte{keyID(secret): []byte(secret)}, now: time.Now}
	if previous != "" {
		t.keys[keyID(previous)] = []byte(previous)
	}
	t.parser = jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithIssuer(tokenIssuer),
		jwt.WithAudience(tokenAudience),
		jwt.WithLeeway(5*time.Second),
		jwt.WithTimeFunc(func() time.Time { return t.now() }),
	)
	return t
}

func (t *Tokens) sign(c Claims) (string, error) {
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
	tok.Header["kid"] = t.kid
	s, err := tok.SignedString(t.keys[t.kid])
	if err != nil {
		return "", fmt.Errorf("tokens: sign: %w", err)
	}
	return s, nil
}

func (t *Tokens) claims(kind, user string, ttl time.Duration) Claims {
	now := t.now()
	return Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    tokenIssuer,
			Audience:  jwt.ClaimStrings{tokenAudience},
			Subject:   user,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
		Kind: kind,
	}
}

// IssueAccess returns an access token for user valid for ttl.
func (t *Tokens) IssueAccess(user string, ttl time.Duration) (string, error) {
	return t.sign(t.claims(KindAccess, user, ttl))
}

// IssueQueue returns a queue token for user in room with ticket seq.
func (t *Tokens) IssueQueue(user, room string, seq int64, ttl time.Duration) (string, error) {
	c := t.claims(KindQueue, user, ttl)
	c.Room, c.Seq = room, seq
	return t.sign(c)
}

// Parse verifies raw as a token of kind: HS256 only, a known kid, exp
// required, iat not in the future, issuer, audience and kind checked.
func (t *Tokens) Parse(raw, kind string) (*Claims, error) {
	var c Claims
	_, err := t.parser.ParseWithClaims(raw, &c, func(tok *jwt.Token) (any, error) {
		kid, _ := tok.Header["kid"].(string)
		key, ok := t.keys[kid]
		if !ok {
			return nil, fmt.Errorf("unknown kid %q", kid)
		}
		return key, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTokenInvalid, err)
	}
	if c.Kind != kind {
		return nil, fmt.Errorf("%w: kind %q, want %q", ErrTokenInvalid, c.Kind, kind)
	}
	if c.Subject == "" {
		return nil, fmt.Errorf("%w: no subject", ErrTokenInvalid)
	}
	if kind == KindQueue && c.Room == "" {
		return nil, fmt.Errorf("%w: queue token without room", ErrTokenInvalid)
	}
	return &c, nil
}

// userID formats a database user id as the token subject and queue member.
func userID(id int64) string { return strconv.FormatInt(id, 10) }
