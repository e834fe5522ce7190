package passcheck

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// HeaderName is the request header that carries the pass: the gateway
// sets it, after stripping any header of that name the client sent.
const HeaderName = "Waitingroom-Pass"

// The modes of a pass.
const (
	// ModeOnce: the pass covers one admission; an origin that wants it
	// spent once records its PassID until its Expiry.
	ModeOnce = "once"
	// ModeSession: the pass covers the visitor's session until its Expiry.
	ModeSession = "session"
)

// Defaults of Options.
const (
	DefaultLeeway     = 5 * time.Second
	DefaultMinRefresh = time.Minute
)

const (
	issuer   = "waitingroom"
	audience = "origin"
	// maxPass bounds what Verify decodes: a pass is a few hundred bytes.
	maxPass = 8 << 10
)

// Options configure a Checker. JWKSURL or Keys (or both) is required.
type Options struct {
	// JWKSURL is the gateway's published key set, e.g.
	// "https://shop.example/_wr/.well-known/jwks.json". It is fetched at
	// the first pass to verify, then again when a pass names a key it does
	// not hold (rotation), at most once per MinRefresh.
	JWKSURL string
	// Keys are trusted public keys, always, beside any fetched ones: the
	// static alternative to JWKSURL.
	Keys []ed25519.PublicKey
	// Rooms are the rooms whose passes are accepted; empty: any room.
	Rooms []string
	// Leeway is the clock skew allowed on exp and iat. Zero: DefaultLeeway;
	// negative: none.
	Leeway time.Duration
	// HTTPClient fetches JWKSURL. Nil: a client with a 10 s timeout.
	HTTPClient *http.Client
	// MinRefresh is the least time between two fetches of the key set, so
	// that a flood of passes naming forged keys cannot make the checker
	// hammer the gateway. Zero or negative: DefaultMinRefresh.
	MinRefresh time.Duration
}

// Claims are what a verified pass says.
type Claims struct {
	Room    string
	Subject string // the visitor
	PassID  string // jti: unique per pass
	Mode    string // ModeOnce or ModeSession
	// IssuedAt and Expiry are whole seconds.
	IssuedAt, Expiry time.Time
}

// Checker verifies passes. It is safe for concurrent use.
//
// # Verifying a pass in another language
//
// Any JWT library that supports EdDSA (Ed25519, RFC 8037) will do:
//
//  1. Fetch the key set from https://<your site>/_wr/.well-known/jwks.json
//     (a JSON Web Key Set; each key has "kty":"OKP", "crv":"Ed25519",
//     "x" the base64url public key, "kid", "use":"sig", "alg":"EdDSA").
//     Cache it; fetch it again when a pass names a kid you do not hold,
//     but not more often than once a minute.
//  2. Read the Waitingroom-Pass request header: a compact JWT. Missing:
//     refuse (403).
//  3. Decode the JOSE header; require "alg":"EdDSA" exactly (refuse
//     "none", "HS256" and everything else: never let the token choose the
//     algorithm) and pick the key by "kid".
//  4. Verify the Ed25519 signature over "<header>.<payload>" (most
//     libraries do steps 3-5 in one call given the key and the allowed
//     algorithm).
//  5. Check the claims: "iss" is "waitingroom", "aud" is "origin", "exp"
//     is in the future and "iat" not in the future (allow a few seconds
//     of clock skew), "room" is one of your rooms.
//  6. Use "sub" (the visitor), "jti" (the pass id), "room" and "mode":
//     "session" covers the visitor's session until "exp"; "once" covers
//     one admission: to spend it once, record "jti" with what the request
//     did (the order it placed), keep it until "exp" and refuse it the
//     second time. The gateway retries a once pass after the origin
//     failed (a 5xx, a timeout) at most twice, with the same "jti": a
//     failure may have placed the order all the same.
type Checker struct {
	parser *jwt.Parser
	rooms  map[string]bool // nil: any room
	static map[string]ed25519.PublicKey
	keys   atomic.Pointer[map[string]ed25519.PublicKey] // static and fetched, by kid

	url        string
	client     *http.Client
	minRefresh time.Duration
	mu         sync.Mutex // serialises fetches
	lastFetch  time.Time  // the last attempt, guarded by mu
}

// New returns a Checker for o. It fetches nothing yet.
func New(o Options) (*Checker, error) {
	if o.JWKSURL == "" && len(o.Keys) == 0 {
		return nil, errors.New("passcheck: neither JWKSURL nor Keys")
	}
	if err := checkURL(o.JWKSURL); err != nil {
		return nil, err
	}
	c := &Checker{url: o.JWKSURL, client: o.HTTPClient, minRefresh: o.MinRefresh,
		static: make(map[string]ed25519.PublicKey, len(o.Keys))}
	for i, k := range o.Keys {
		if len(k) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("passcheck: key %d is %d bytes, want an Ed25519 public key (%d)", i, len(k), ed25519.PublicKeySize)
		}
		c.static[keyID(k)] = k
	}
	c.keys.Store(&c.static)
	if len(o.Rooms) > 0 {
		c.rooms = make(map[string]bool, len(o.Rooms))
		for _, r := range o.Rooms {
			c.rooms[r] = true
		}
	}
	if c.client == nil {
		c.client = &http.Client{Timeout: fetchTimeout}
	}
	if c.minRefresh <= 0 {
		c.minRefresh = DefaultMinRefresh
	}
	c.parser = newParser(o.Leeway)
	return c, nil
}

func checkURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return errors.New("passcheck: JWKSURL is not an http(s) URL")
	}
	return nil
}

func newParser(leeway time.Duration) *jwt.Parser {
	switch {
	case leeway == 0:
		leeway = DefaultLeeway
	case leeway < 0:
		leeway = 0
	}
	return jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithIssuer(issuer),
		jwt.WithAudience(audience),
		jwt.WithLeeway(leeway),
	)
}

// wire is a pass's payload.
type wire struct {
	jwt.RegisteredClaims
	Room string `json:"room"`
	Mode string `json:"mode"`
}

// Verify checks raw, the value of the pass header: the algorithm must be
// EdDSA (none, HS256 and every other are refused), the kid known, the
// signature valid, iss "waitingroom", aud "origin", exp and iat present
// and current (within the leeway), sub, jti, room and mode present, the
// room accepted. A refusal wraps one of the Err reasons (see Reason).
func (c *Checker) Verify(raw string) (*Claims, error) {
	if raw == "" {
		return nil, ErrMissing
	}
	if len(raw) > maxPass {
		return nil, fmt.Errorf("%w: %d bytes", ErrMalformed, len(raw))
	}
	var w wire
	tok, err := c.parser.ParseWithClaims(raw, &w, c.keyFor)
	if err != nil {
		return nil, classify(tok, err)
	}
	return c.accept(&w)
}

// accept checks what golang-jwt does not.
func (c *Checker) accept(w *wire) (*Claims, error) {
	switch {
	case w.IssuedAt == nil:
		return nil, fmt.Errorf("%w: no iat", ErrClaims)
	case w.Subject == "" || w.ID == "" || w.Room == "":
		return nil, fmt.Errorf("%w: sub, jti or room missing", ErrClaims)
	case w.Mode != ModeOnce && w.Mode != ModeSession:
		return nil, fmt.Errorf("%w: mode %.32q", ErrClaims, w.Mode)
	case c.rooms != nil && !c.rooms[w.Room]:
		return nil, fmt.Errorf("%w: %.64q", ErrRoom, w.Room)
	}
	return &Claims{Room: w.Room, Subject: w.Subject, PassID: w.ID, Mode: w.Mode,
		IssuedAt: w.IssuedAt.Time, Expiry: w.ExpiresAt.Time}, nil
}
