package pass

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// HeaderName is the request header that carries the pass to the origin.
// The gateway sets it on the protected requests it forwards and strips
// any header of that name the client sent.
const HeaderName = "Waitingroom-Pass"

// The modes of a pass.
const (
	// ModeOnce: the pass covers one admission; an origin that wants it
	// spent once records its PassID until its Expiry.
	ModeOnce = "once"
	// ModeSession: the pass covers the visitor's session until its Expiry.
	ModeSession = "session"
)

// The registered claims every pass carries.
const (
	issuer   = "waitingroom"
	audience = "origin"
)

// Claims are what a pass says.
type Claims struct {
	Room    string
	Subject string // the visitor
	PassID  string // jti: unique per pass
	Mode    string // ModeOnce or ModeSession
	// IssuedAt and Expiry are carried in whole seconds.
	IssuedAt, Expiry time.Time
}

// Config is the signer's keys (ParseKey reads each from its base64).
type Config struct {
	// Key signs every pass; it is published first in the key set.
	Key ed25519.PrivateKey
	// Previous keys sign nothing and stay published, so that origins keep
	// accepting the passes they signed (rotation).
	Previous []ed25519.PrivateKey
}

// Signer signs passes with one key and publishes the key set.
type Signer struct {
	key    ed25519.PrivateKey
	header string // the encoded JOSE header, ready to sign behind
	jwks   []byte
}

// wire is a pass's payload, in the order it is written.
type wire struct {
	Issuer   string `json:"iss"`
	Audience string `json:"aud"`
	Subject  string `json:"sub"`
	ID       string `json:"jti"`
	IssuedAt int64  `json:"iat"`
	Expiry   int64  `json:"exp"`
	Room     string `json:"room"`
	Mode     string `json:"mode"`
}

// New returns a Signer for cfg: Key is required; every key must be an
// Ed25519 private key (64 bytes, as ParseKey returns it).
func New(cfg Config) (*Signer, error) {
	if len(cfg.Key) == 0 {
		return nil, errors.New("pass: no key")
	}
	keys := append([]ed25519.PrivateKey{cfg.Key}, cfg.Previous...)
	for i, k := range keys {
		if len(k) != ed25519.PrivateKeySize {
			return nil, fmt.Errorf("pass: key %d is %d bytes, want an Ed25519 private key (%d)", i, len(k), ed25519.PrivateKeySize)
		}
	}
	jwks, err := keySet(keys)
	if err != nil {
		return nil, err
	}
	header, err := json.Marshal(struct {
		Alg string `json:"alg"`
		Typ string `json:"typ"`
		Kid string `json:"kid"`
	}{jwt.SigningMethodEdDSA.Alg(), "JWT", keyID(publicKey(cfg.Key))})
	if err != nil {
		return nil, fmt.Errorf("pass: header: %w", err)
	}
	return &Signer{key: cfg.Key, header: base64.RawURLEncoding.EncodeToString(header), jwks: jwks}, nil
}

// Sign returns c as a compact JWT signed with the current key. Every field
// is required; Mode must be ModeOnce or ModeSession and Expiry after
// IssuedAt.
func (s *Signer) Sign(c Claims) (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	payload, err := json.Marshal(wire{
		Issuer: issuer, Audience: audience, Subject: c.Subject, ID: c.PassID,
		IssuedAt: c.IssuedAt.Unix(), Expiry: c.Expiry.Unix(), Room: c.Room, Mode: c.Mode,
	})
	if err != nil {
		return "", fmt.Errorf("pass: sign: %w", err)
	}
	enc := base64.RawURLEncoding
	buf := make([]byte, 0, len(s.header)+enc.EncodedLen(len(payload))+enc.EncodedLen(ed25519.SignatureSize)+2)
	buf = append(buf, s.header...)
	buf = append(buf, '.')
	buf = enc.AppendEncode(buf, payload)
	sig := ed25519.Sign(s.key, buf)
	buf = append(buf, '.')
	buf = enc.AppendEncode(buf, sig)
	return string(buf), nil
}

func (c Claims) check() error {
	switch {
	case c.Room == "":
		return errors.New("pass: sign: no room")
	case c.Subject == "":
		return errors.New("pass: sign: no subject")
	case c.PassID == "":
		return errors.New("pass: sign: no pass id")
	case c.Mode != ModeOnce && c.Mode != ModeSession:
		return fmt.Errorf("pass: sign: mode %q, want %q or %q", c.Mode, ModeOnce, ModeSession)
	case c.IssuedAt.IsZero():
		return errors.New("pass: sign: no issue time")
	case c.Expiry.Unix() <= c.IssuedAt.Unix():
		return errors.New("pass: sign: expiry not after issue time")
	}
	return nil
}

// JWKS returns the published key set (RFC 8037): the current key first,
// then the previous ones. It is computed once, at New; the slice is shared
// and must not be modified.
func (s *Signer) JWKS() []byte { return s.jwks }

// jwk is one public key of the set.
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
}

// keySet is the JSON Web Key Set of keys' public halves, in order, each
// key once.
func keySet(keys []ed25519.PrivateKey) ([]byte, error) {
	set := struct {
		Keys []jwk `json:"keys"`
	}{Keys: make([]jwk, 0, len(keys))}
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		pub := publicKey(k)
		kid := keyID(pub)
		if seen[kid] {
			continue
		}
		seen[kid] = true
		set.Keys = append(set.Keys, jwk{
			Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(pub),
			Kid: kid, Use: "sig", Alg: jwt.SigningMethodEdDSA.Alg(),
		})
	}
	b, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("pass: key set: %w", err)
	}
	return b, nil
}

func publicKey(k ed25519.PrivateKey) ed25519.PublicKey {
	return k.Public().(ed25519.PublicKey)
}
