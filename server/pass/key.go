package pass

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Keys: a key is the 32-byte Ed25519 seed, base64 (standard or URL
// alphabet, padded or not). Make one with
//
//	openssl rand -base64 32
//
// (or GenerateKey). A key's id (kid, in every pass's header and in the key
// set) is the first 8 bytes of the SHA-256 of its public key, in hex.
//
// Rotation: Config.Key signs every pass; Config.Previous are keys that
// sign nothing but stay in the published key set, so origins keep
// accepting the passes they signed until those expire. To rotate without
// an origin ever refusing a pass, even while instances of the gateway run
// with different settings:
//
//  1. publish the new key first: Key old, Previous new;
//  2. sign with it: Key new, Previous old;
//  3. once the last pass of the old key has expired: drop it from
//     Previous.
//
// docs/gateway.md says it in the operator's variables.

// keyEncodings are the base64 forms ParseKey accepts, padded forms first.
var keyEncodings = []*base64.Encoding{
	base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding,
}

// ParseKey reads an Ed25519 private key from s, the base64 (standard or URL
// alphabet, padded or not) of its 32-byte seed; surrounding white space is
// ignored. Its errors say what is wrong and never contain s.
func ParseKey(s string) (ed25519.PrivateKey, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("pass key: empty")
	}
	for _, enc := range keyEncodings {
		seed, err := enc.DecodeString(s)
		if err != nil {
			continue
		}
		if len(seed) != ed25519.SeedSize {
			return nil, fmt.Errorf("pass key: decodes to %d bytes, want %d (an Ed25519 seed; make one with openssl rand -base64 32)",
				len(seed), ed25519.SeedSize)
		}
		return ed25519.NewKeyFromSeed(seed), nil
	}
	return nil, errors.New("pass key: not base64 (standard or URL alphabet, padded or not)")
}

// GenerateKey returns a fresh random key in the form ParseKey reads (the
// same as `openssl rand -base64 32`): for development mode, and for
// operators who would rather not use openssl.
func GenerateKey() string {
	seed := make([]byte, ed25519.SeedSize)
	rand.Read(seed) // never fails: crypto/rand crashes the program instead
	return base64.StdEncoding.EncodeToString(seed)
}

// keyID is a public key's id: the first 8 bytes of its SHA-256, in hex.
func keyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}
