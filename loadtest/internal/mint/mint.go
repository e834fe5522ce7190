// Package mint issues access tokens from the server's JWT secret, so that
// a run of thousands of users needs no BCrypt logins.
package mint

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"os"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Minter issues access tokens the way the server's login does, from the
// server's own secret: a load run of 10,000 users then skips 10,000 BCrypt
// logins (minutes of the server's CPU, which is not what a stream benchmark
// measures). It knows the token format, not the server's code: HS256,
// header kid = the first 8 hex digits of sha256(secret), claims iss and aud
// "waitingroom", sub = the user's id, kind "access", iat and exp.
type Minter struct {
	secret []byte
	Kid    string
	ttl    time.Duration
	now    func() time.Time
}

// accessClaims is the access token's claim set.
type accessClaims struct {
	jwt.RegisteredClaims
	Kind string `json:"kind"`
}

// New returns a minter of tokens valid for ttl; secret must be the
// server's, at least 32 bytes.
func New(secret string, ttl time.Duration) (*Minter, error) {
	if len(secret) < 32 {
		return nil, errors.New("mint: the JWT secret is missing or shorter than 32 bytes: pass --jwt-secret or set WR_JWT_SECRET to the server's")
	}
	sum := sha256.Sum256([]byte(secret))
	return &Minter{secret: []byte(secret), Kid: hex.EncodeToString(sum[:4]), ttl: ttl, now: time.Now}, nil
}

// Access returns an access token for the user with database id id.
func (m *Minter) Access(id int64) (string, error) {
	now := m.now()
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, accessClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    "waitingroom",
			Audience:  jwt.ClaimStrings{"waitingroom"},
			Subject:   strconv.FormatInt(id, 10),
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(m.ttl)),
		},
		Kind: "access",
	})
	tok.Header["kid"] = m.Kid
	return tok.SignedString(m.secret)
}

// Flags registers --mint-tokens and --jwt-secret on fs; the returned
// func, called after parsing, builds the minter (nil without --mint-tokens).
func Flags(fs *flag.FlagSet) func() (*Minter, error) {
	mint := fs.Bool("mint-tokens", false, "mint access tokens with the server's JWT secret instead of logging in (BCrypt: slow)")
	secret := fs.String("jwt-secret", "", "the server's JWT secret, for --mint-tokens (default $WR_JWT_SECRET)")
	return func() (*Minter, error) {
		if !*mint {
			return nil, nil
		}
		if *secret == "" {
			*secret = os.Getenv("WR_JWT_SECRET")
		}
		return New(*secret, 2*time.Hour)
	}
}
