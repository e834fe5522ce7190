package pass_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"waitingroom/server/pass"
)

// seed is a fixed test seed: bytes 0..31.
var seed = func() []byte {
	b := make([]byte, ed25519.SeedSize)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}()

func TestParseKeyAcceptsEveryBase64Form(t *testing.T) {
	want := ed25519.NewKeyFromSeed(seed)
	for _, s := range []string{
		base64.StdEncoding.EncodeToString(seed),
		base64.RawStdEncoding.EncodeToString(seed),
		base64.URLEncoding.EncodeToString(seed),
		base64.RawURLEncoding.EncodeToString(seed),
		"  " + base64.StdEncoding.EncodeToString(seed) + "\n",
	} {
		k, err := pass.ParseKey(s)
		if err != nil || !k.Equal(want) {
			t.Errorf("ParseKey(%q) = %v", s, err)
		}
	}
}

func TestParseKeyRefusalsDoNotEchoTheKey(t *testing.T) {
	short := base64.StdEncoding.EncodeToString(seed[:16])
	for s, want := range map[string]string{
		"":                  "empty",
		"not*base64*at*all": "not base64",
		short:               "16 bytes",
		base64.StdEncoding.EncodeToString(append(seed, seed...)): "64 bytes",
	} {
		_, err := pass.ParseKey(s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseKey(%q) = %v, want an error saying %q", s, err, want)
			continue
		}
		if s != "" && strings.Contains(err.Error(), s) {
			t.Errorf("the error echoes the key: %v", err)
		}
	}
}

func TestGenerateKey(t *testing.T) {
	a, b := pass.GenerateKey(), pass.GenerateKey()
	if a == b {
		t.Fatal("two generated keys are equal")
	}
	if _, err := pass.ParseKey(a); err != nil {
		t.Fatalf("a generated key does not parse: %v", err)
	}
	if len(a) != 44 || !strings.HasSuffix(a, "=") {
		t.Fatalf("generated key %q is not in the form of openssl rand -base64 32", a)
	}
}

func TestNewRefusesBadKeys(t *testing.T) {
	good := ed25519.NewKeyFromSeed(seed)
	for name, cfg := range map[string]pass.Config{
		"no key":         {},
		"short key":      {Key: good[:32]},
		"short previous": {Key: good, Previous: []ed25519.PrivateKey{good[:10]}},
	} {
		if _, err := pass.New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func kid(k ed25519.PrivateKey) string {
	sum := sha256.Sum256(k.Public().(ed25519.PublicKey))
	return hex.EncodeToString(sum[:8])
}

// TestJWKS: the current key first, then the previous ones, each once, in
// the RFC 8037 form.
func TestJWKS(t *testing.T) {
	cur := ed25519.NewKeyFromSeed(seed)
	prev := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	s, err := pass.New(pass.Config{Key: cur, Previous: []ed25519.PrivateKey{prev, cur, prev}})
	if err != nil {
		t.Fatal(err)
	}
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	if err := json.Unmarshal(s.JWKS(), &set); err != nil {
		t.Fatal(err)
	}
	if len(set.Keys) != 2 {
		t.Fatalf("key set = %s, want two keys", s.JWKS())
	}
	for i, k := range []ed25519.PrivateKey{cur, prev} {
		want := map[string]string{
			"kty": "OKP", "crv": "Ed25519", "use": "sig", "alg": "EdDSA", "kid": kid(k),
			"x": base64.RawURLEncoding.EncodeToString(k.Public().(ed25519.PublicKey)),
		}
		if len(set.Keys[i]) != len(want) {
			t.Errorf("key %d = %v, want %v", i, set.Keys[i], want)
		}
		for f, v := range want {
			if set.Keys[i][f] != v {
				t.Errorf("key %d: %s = %q, want %q", i, f, set.Keys[i][f], v)
			}
		}
	}
	if len(kid(cur)) != 16 {
		t.Fatalf("kid %q is not 16 hex characters", kid(cur))
	}
}

func testClaims() pass.Claims {
	now := time.Unix(1_800_000_000, 0)
	return pass.Claims{Room: "launch", Subject: "42", PassID: "p-1", Mode: pass.ModeSession,
		IssuedAt: now, Expiry: now.Add(10 * time.Minute)}
}

// TestSignWritesTheAgreedToken: header, payload and an Ed25519 signature
// of the current key over both.
func TestSignWritesTheAgreedToken(t *testing.T) {
	key := ed25519.NewKeyFromSeed(seed)
	s, _ := pass.New(pass.Config{Key: key})
	raw, err := s.Sign(testClaims())
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		t.Fatalf("%q is not a compact JWT", raw)
	}
	dec := func(p string) string {
		b, err := base64.RawURLEncoding.DecodeString(p)
		if err != nil {
			t.Fatalf("segment %q: %v", p, err)
		}
		return string(b)
	}
	if h, want := dec(parts[0]), `{"alg":"EdDSA","typ":"JWT","kid":"`+kid(key)+`"}`; h != want {
		t.Errorf("header = %s, want %s", h, want)
	}
	want := `{"iss":"waitingroom","aud":"origin","sub":"42","jti":"p-1","iat":1800000000,"exp":1800000600,"room":"launch","mode":"session"}`
	if p := dec(parts[1]); p != want {
		t.Errorf("payload = %s, want %s", p, want)
	}
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	if !ed25519.Verify(key.Public().(ed25519.PublicKey), []byte(parts[0]+"."+parts[1]), sig) {
		t.Error("the signature does not verify")
	}
}

func TestSignRefusesIncompleteClaims(t *testing.T) {
	s, _ := pass.New(pass.Config{Key: ed25519.NewKeyFromSeed(seed)})
	for name, edit := range map[string]func(*pass.Claims){
		"no room":      func(c *pass.Claims) { c.Room = "" },
		"no subject":   func(c *pass.Claims) { c.Subject = "" },
		"no pass id":   func(c *pass.Claims) { c.PassID = "" },
		"bad mode":     func(c *pass.Claims) { c.Mode = "forever" },
		"no iat":       func(c *pass.Claims) { c.IssuedAt = time.Time{} },
		"exp too soon": func(c *pass.Claims) { c.Expiry = c.IssuedAt.Add(500 * time.Millisecond) },
	} {
		c := testClaims()
		edit(&c)
		if raw, err := s.Sign(c); err == nil {
			t.Errorf("%s: signed %q", name, raw)
		}
	}
}

func BenchmarkSign(b *testing.B) {
	s, _ := pass.New(pass.Config{Key: ed25519.NewKeyFromSeed(seed)})
	c := testClaims()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Sign(c); err != nil {
			b.Fatal(err)
		}
	}
}
