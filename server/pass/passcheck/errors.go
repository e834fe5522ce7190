package passcheck

import (
	"errors"
	"fmt"

	"github.com/golang-jwt/jwt/v5"
)

// The reasons Verify refuses a pass. Every error Verify returns wraps
// exactly one of them (and the cause, for the log): test with errors.Is,
// or name it with Reason.
var (
	ErrMissing    = errors.New("pass missing")
	ErrMalformed  = errors.New("pass malformed")
	ErrAlgorithm  = errors.New("pass algorithm refused")
	ErrUnknownKey = errors.New("pass signed by an unknown key")
	ErrSignature  = errors.New("pass signature invalid")
	ErrExpired    = errors.New("pass expired")
	ErrNotYet     = errors.New("pass not valid yet")
	ErrIssuer     = errors.New("pass issuer refused")
	ErrAudience   = errors.New("pass audience refused")
	ErrRoom       = errors.New("pass room refused")
	ErrClaims     = errors.New("pass claims invalid")
)

var reasons = []struct {
	err  error
	word string
}{
	{ErrMissing, "missing"}, {ErrMalformed, "malformed"}, {ErrAlgorithm, "algorithm"},
	{ErrUnknownKey, "unknown_kid"}, {ErrSignature, "bad_signature"}, {ErrExpired, "expired"},
	{ErrNotYet, "not_yet_valid"}, {ErrIssuer, "issuer"}, {ErrAudience, "audience"},
	{ErrRoom, "room"}, {ErrClaims, "invalid_claims"},
}

// Reason names why a pass was refused, in one fixed word for a log line
// ("expired", "unknown_kid", "room", ...); "invalid" for an error that
// wraps none of the reasons above.
func Reason(err error) string {
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.word
		}
	}
	return "invalid"
}

// classify maps golang-jwt's error for tok to one of the reasons.
func classify(tok *jwt.Token, err error) error {
	switch {
	case errors.Is(err, ErrUnknownKey):
		return err // from keyFor, already ours
	case errors.Is(err, jwt.ErrTokenMalformed):
		return wrap(ErrMalformed, err)
	case tok == nil || tok.Method != jwt.SigningMethodEdDSA:
		return wrap(ErrAlgorithm, err) // none, HS*, unknown or absent alg
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return wrap(ErrSignature, err)
	case errors.Is(err, jwt.ErrTokenExpired):
		return wrap(ErrExpired, err)
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued), errors.Is(err, jwt.ErrTokenNotValidYet):
		return wrap(ErrNotYet, err)
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return wrap(ErrIssuer, err)
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return wrap(ErrAudience, err)
	}
	return wrap(ErrClaims, err)
}

func wrap(reason, cause error) error {
	return fmt.Errorf("%w: %w", reason, cause)
}
