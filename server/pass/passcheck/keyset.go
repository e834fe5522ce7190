package passcheck

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const (
	// fetchTimeout bounds one fetch of the key set, whatever the client.
	fetchTimeout = 10 * time.Second
	// maxKeySet bounds the key set's body: a few keys take a few hundred bytes.
	maxKeySet = 64 << 10
)

// errThrottled: the key set was fetched (or tried) less than MinRefresh ago.
var errThrottled = errors.New("key set fetched less than MinRefresh ago")

// keyID is a public key's id as the gateway names it (the kid of its
// passes and of its key set): the first 8 bytes of the key's SHA-256, hex.
func keyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// keyFor is the golang-jwt key function: the public key the pass's kid
// names, fetching the key set when the kid is unknown.
func (c *Checker) keyFor(tok *jwt.Token) (any, error) {
	kid, _ := tok.Header["kid"].(string)
	if k, ok := (*c.keys.Load())[kid]; ok {
		return k, nil
	}
	if kid == "" || c.url == "" {
		return nil, fmt.Errorf("%w: kid %.32q", ErrUnknownKey, kid)
	}
	err := c.refresh(kid)
	if k, ok := (*c.keys.Load())[kid]; ok {
		return k, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: kid %.32q: %w", ErrUnknownKey, kid, err)
	}
	return nil, fmt.Errorf("%w: kid %.32q", ErrUnknownKey, kid)
}

// refresh fetches the key set unless kid has arrived meanwhile or the last
// attempt is less than MinRefresh old. A failed fetch keeps the keys held.
func (c *Checker) refresh(kid string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := (*c.keys.Load())[kid]; ok {
		return nil
	}
	if !c.lastFetch.IsZero() && time.Since(c.lastFetch) < c.minRefresh {
		return errThrottled
	}
	c.lastFetch = time.Now()
	fetched, err := c.fetch()
	if err != nil {
		return err
	}
	keys := maps.Clone(fetched)
	maps.Copy(keys, c.static)
	c.keys.Store(&keys)
	return nil
}

// fetch gets and parses the key set.
func (c *Checker) fetch() (map[string]ed25519.PublicKey, error) {
	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return nil, fmt.Errorf("key set: %w", err)
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("key set: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("key set: status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxKeySet+1))
	if err != nil {
		return nil, fmt.Errorf("key set: %w", err)
	}
	if len(body) > maxKeySet {
		return nil, fmt.Errorf("key set: larger than %d bytes", maxKeySet)
	}
	return parseKeySet(body)
}

// parseKeySet reads the Ed25519 signing keys of a JSON Web Key Set (RFC
// 8037) by kid; keys of any other kind are skipped.
func parseKeySet(body []byte) (map[string]ed25519.PublicKey, error) {
	var set struct {
		Keys []struct {
			Kty, Crv, X, Kid, Use, Alg string
		} `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("key set: %w", err)
	}
	keys := make(map[string]ed25519.PublicKey, len(set.Keys))
	for _, k := range set.Keys {
		if k.Kty != "OKP" || k.Crv != "Ed25519" || (k.Use != "" && k.Use != "sig") ||
			(k.Alg != "" && k.Alg != jwt.SigningMethodEdDSA.Alg()) {
			continue
		}
		pub, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil || len(pub) != ed25519.PublicKeySize {
			continue
		}
		kid := k.Kid
		if kid == "" {
			kid = keyID(pub)
		}
		keys[kid] = pub
	}
	if len(keys) == 0 {
		return nil, errors.New("key set: no Ed25519 signing key")
	}
	return keys, nil
}
