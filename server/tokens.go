package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"strconv"
	"strings"
	"sync"
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

// errTokenKind: a valid token of the other kind (an access token where a
// queue token is required, or the reverse).
var errTokenKind = errors.New("wrong kind")

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
	cache  verified
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
// The returned claims are shared and must not be modified.
//
// A token verified before is found in a cache keyed by its exact bytes
// (signature included), so a client polling with the same token is not
// decoded and verified again on every request: only its expiry and kind are
// checked. Any other byte string is verified in full.
func (t *Tokens) Parse(raw, kind string) (*Claims, error) {
	c := t.cache.get(raw)
	if c == nil {
		var err error
		if c, err = t.verify(raw); err != nil {
			return nil, err
		}
		t.cache.put(raw, c)
	}
	if !c.ExpiresAt.After(t.now()) {
		return nil, fmt.Errorf("%w: %w", ErrTokenInvalid, jwt.ErrTokenExpired)
	}
	if c.Kind != kind {
		return nil, fmt.Errorf("%w: %w: kind %q, want %q", ErrTokenInvalid, errTokenKind, c.Kind, kind)
	}
	if kind == KindQueue && c.Room == "" {
		return nil, fmt.Errorf("%w: %w: queue token without room", ErrTokenInvalid, errTokenKind)
	}
	return c, nil
}

// verify checks raw's signature and registered claims.
func (t *Tokens) verify(raw string) (*Claims, error) {
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
	if c.Subject == "" {
		return nil, fmt.Errorf("%w: no subject", ErrTokenInvalid)
	}
	return &c, nil
}

// verified caches verified claims by the token's exact bytes. It is
// sharded (no lock shared by all requests) and bounded: a shard that
// reaches its size is emptied, so memory stays small under any load, and
// expired entries go with it.
type verified struct {
	shards [64]verifiedShard
}

type verifiedShard struct {
	mu sync.RWMutex
	m  map[string]*Claims
}

// verifiedShardSize bounds each shard: 64 × 4096 tokens in all.
const verifiedShardSize = 4096

var verifiedSeed = maphash.MakeSeed()

func (v *verified) shard(raw string) *verifiedShard {
	return &v.shards[maphash.String(verifiedSeed, raw)%uint64(len(v.shards))]
}

func (v *verified) get(raw string) *Claims {
	sh := v.shard(raw)
	sh.mu.RLock()
	c := sh.m[raw]
	sh.mu.RUnlock()
	return c
}

func (v *verified) put(raw string, c *Claims) {
	sh := v.shard(raw)
	sh.mu.Lock()
	if sh.m == nil || len(sh.m) >= verifiedShardSize {
		sh.m = make(map[string]*Claims, 64)
	}
	sh.m[strings.Clone(raw)] = c
	sh.mu.Unlock()
}

// userID formats a database user id as the token subject and queue member.
func userID(id int64) string { return strconv.FormatInt(id, 10) }
