package token

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Token kinds: a token of one kind is refused where another is required.
// Access (from login) and queue (from enter) are the API's; visitor (an
// anonymous visitor's identity), session (a gateway pass in mode
// "session") and visit (the page visit a once pass opened) are gateway
// mode's, carried in HttpOnly cookies.
const (
	KindAccess  = "access"
	KindQueue   = "queue"
	KindVisitor = "visitor"
	KindSession = "session"
	KindVisit   = "visit"
)

const (
	tokenIssuer   = "waitingroom"
	tokenAudience = "waitingroom"
)

// ErrInvalid is any token that fails verification; the reason goes to the
// log (Reason), never to the client.
var ErrInvalid = errors.New("token invalid")

// errWrongKind: a valid token of the other kind (an access token where a
// queue token is required, or the reverse).
var errWrongKind = errors.New("wrong kind")

// Claims are the claims of both token kinds.
type Claims struct {
	jwt.RegisteredClaims
	Kind string `json:"kind"`
	Room string `json:"room,omitempty"`
	// Seq is the ticket number (queue tokens of waiting users).
	Seq int64 `json:"seq,omitempty"`
}

// Config is the tokens' keys, the operator's secrets (cmd/waitingroom's
// LoadConfig checks their length).
type Config struct {
	// Secret signs every new token and verifies them.
	Secret string
	// Previous (may be empty) still verifies the tokens it signed, while
	// clients holding them age out (rotation); it signs nothing.
	Previous string
}

// Issuer issues and verifies HS256 JWTs. Each key carries a kid derived
// from its secret, so a token names the key that verifies it.
type Issuer struct {
	kid    string
	keys   map[string][]byte
	signer *signer            // signs with keys[kid]
	byHead map[string]*signer // every key's signer by its header segment (verifyOwn)
	parser *jwt.Parser
	now    func() time.Time
	cache  verified
}

// leeway is the clock skew allowed on exp and iat.
const leeway = 5 * time.Second

func keyID(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:4])
}

// New returns an Issuer signing with cfg.Secret and also accepting
// cfg.Previous.
func New(cfg Config) *Issuer {
	t := &Issuer{kid: keyID(cfg.Secret), keys: map[string][]byte{keyID(cfg.Secret): []byte(cfg.Secret)}, now: time.Now}
	if cfg.Previous != "" {
		t.keys[keyID(cfg.Previous)] = []byte(cfg.Previous)
	}
	t.byHead = map[string]*signer{}
	for kid, key := range t.keys {
		s := newSigner(kid, key)
		t.byHead[s.head] = s
		if kid == t.kid {
			t.signer = s
		}
	}
	t.parser = jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithIssuer(tokenIssuer),
		jwt.WithAudience(tokenAudience),
		jwt.WithLeeway(leeway),
		jwt.WithTimeFunc(func() time.Time { return t.now() }),
	)
	return t
}

// sign returns c signed with the current key (sign.go).
func (t *Issuer) sign(c Claims) (string, error) { return t.signer.sign(&c) }

func (t *Issuer) claims(kind, user string, ttl time.Duration) Claims {
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
func (t *Issuer) IssueAccess(user string, ttl time.Duration) (string, error) {
	return t.sign(t.claims(KindAccess, user, ttl))
}

// IssueQueue returns a queue token for user in room with ticket seq.
func (t *Issuer) IssueQueue(user, room string, seq int64, ttl time.Duration) (string, error) {
	c := t.claims(KindQueue, user, ttl)
	c.Room, c.Seq = room, seq
	return t.sign(c)
}

// IssueVisitor returns the identity token of an anonymous visitor.
func (t *Issuer) IssueVisitor(visitor string, ttl time.Duration) (string, error) {
	return t.sign(t.claims(KindVisitor, visitor, ttl))
}

// IssueSession returns the token of user's gateway session in room: id
// names it (the pass id), start and end bound it (iat and exp).
func (t *Issuer) IssueSession(user, room, id string, start, end time.Time) (string, error) {
	c := t.claims(KindSession, user, 0)
	c.Room, c.ID = room, id
	c.IssuedAt, c.ExpiresAt = jwt.NewNumericDate(start), jwt.NewNumericDate(end)
	return t.sign(c)
}

// IssueVisit returns the token of the page visit user's once pass opened
// in room: id is the pass id, the visit lasts until end.
func (t *Issuer) IssueVisit(user, room, id string, end time.Time) (string, error) {
	c := t.claims(KindVisit, user, 0)
	c.Room, c.ID = room, id
	c.ExpiresAt = jwt.NewNumericDate(end)
	return t.sign(c)
}

// Parse verifies raw as a token of kind: HS256 only, a known kid, exp
// required, iat not in the future, issuer, audience and kind checked.
// The returned claims are shared and must not be modified.
//
// A token verified before is found in a cache keyed by its exact bytes
// (signature included), so a client polling with the same token is not
// decoded and verified again on every request: only its expiry and kind are
// checked. Any other byte string is verified in full. Access tokens are
// not cached: a user presents one a few times (enter, orders), and in a
// surge of arrivals caching each would cost more than verifying it again
// (verifyOwn).
func (t *Issuer) Parse(raw, kind string) (*Claims, error) {
	c := t.cache.get(raw)
	if c == nil {
		var err error
		if c, err = t.verify(raw); err != nil {
			return nil, err
		}
		if c.Kind != KindAccess {
			t.cache.put(raw, c)
		}
	}
	if !c.ExpiresAt.After(t.now()) {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, jwt.ErrTokenExpired)
	}
	if c.Kind != kind {
		return nil, fmt.Errorf("%w: %w: kind %q, want %q", ErrInvalid, errWrongKind, c.Kind, kind)
	}
	if (kind == KindQueue || kind == KindSession || kind == KindVisit) && c.Room == "" {
		return nil, fmt.Errorf("%w: %w: %s token without room", ErrInvalid, errWrongKind, kind)
	}
	return c, nil
}

// verify checks raw's signature and registered claims: a token in the
// form this package signs by verifyOwn, any other by golang-jwt.
func (t *Issuer) verify(raw string) (*Claims, error) {
	if c, ok := t.verifyOwn(raw); ok {
		return c, nil
	}
	return t.verifyFull(raw)
}

// verifyFull is verify by golang-jwt's parser.
func (t *Issuer) verifyFull(raw string) (*Claims, error) {
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
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if c.Subject == "" {
		return nil, fmt.Errorf("%w: no subject", ErrInvalid)
	}
	return &c, nil
}

// Reason names why a token was refused, from the errors its verification
// wrapped (never from their text): one of a few fixed words for the
// security log, "invalid" when nothing more precise applies.
func Reason(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return "expired"
	case errors.Is(err, errWrongKind):
		return "wrong_kind"
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "malformed"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "bad_signature" // also a method other than HS256
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return "unknown_kid" // the key lookup is the only thing that can fail here
	case errors.Is(err, jwt.ErrTokenInvalidClaims):
		return "invalid_claims" // issuer, audience, iat, nbf, subject
	}
	return "invalid"
}
