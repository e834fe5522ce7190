package passcheck_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"waitingroom/server/pass"
	"waitingroom/server/pass/passcheck"
)

// gateway is a signing key and its signer.
type gateway struct {
	key    ed25519.PrivateKey
	signer *pass.Signer
}

func newGateway(t testing.TB, previous ...gateway) gateway {
	t.Helper()
	key, err := pass.ParseKey(pass.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	return gateway{key: key, signer: signer(t, key, previous...)}
}

func signer(t testing.TB, key ed25519.PrivateKey, previous ...gateway) *pass.Signer {
	t.Helper()
	cfg := pass.Config{Key: key}
	for _, p := range previous {
		cfg.Previous = append(cfg.Previous, p.key)
	}
	s, err := pass.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (g gateway) public() ed25519.PublicKey { return g.key.Public().(ed25519.PublicKey) }

func (g gateway) sign(t testing.TB, room string, iat, exp time.Time) string {
	t.Helper()
	raw, err := g.signer.Sign(pass.Claims{Room: room, Subject: "42", PassID: "p-1", Mode: pass.ModeOnce, IssuedAt: iat, Expiry: exp})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func (g gateway) pass(t testing.TB) string {
	now := time.Now()
	return g.sign(t, "launch", now, now.Add(10*time.Minute))
}

// jwks serves a key set that the test can swap, and counts its fetches.
type jwks struct {
	srv     *httptest.Server
	set     atomic.Pointer[[]byte]
	fetches atomic.Int64
}

func serveJWKS(t *testing.T, s *pass.Signer) *jwks {
	j := &jwks{}
	j.publish(s)
	j.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		j.fetches.Add(1)
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_, _ = w.Write(*j.set.Load())
	}))
	t.Cleanup(j.srv.Close)
	return j
}

func (j *jwks) publish(s *pass.Signer) { b := s.JWKS(); j.set.Store(&b) }

func newChecker(t *testing.T, o passcheck.Options) *passcheck.Checker {
	t.Helper()
	c, err := passcheck.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func wantRefused(t *testing.T, c *passcheck.Checker, raw string, reason error) {
	t.Helper()
	if got, err := c.Verify(raw); !errors.Is(err, reason) {
		t.Fatalf("Verify = %+v, %v; want %v", got, err, reason)
	}
}

func TestVerifyValidPass(t *testing.T) {
	g := newGateway(t)
	j := serveJWKS(t, g.signer)
	now := time.Now()
	raw := g.sign(t, "launch", now, now.Add(time.Minute))
	for name, o := range map[string]passcheck.Options{
		"key set": {JWKSURL: j.srv.URL, Rooms: []string{"launch"}},
		"static":  {Keys: []ed25519.PublicKey{g.public()}},
	} {
		c, err := newChecker(t, o).Verify(raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := passcheck.Claims{Room: "launch", Subject: "42", PassID: "p-1", Mode: passcheck.ModeOnce,
			IssuedAt: time.Unix(now.Unix(), 0), Expiry: time.Unix(now.Add(time.Minute).Unix(), 0)}
		if *c != want {
			t.Fatalf("%s: claims = %+v, want %+v", name, *c, want)
		}
	}
}

func TestVerifyExpiredWithLeeway(t *testing.T) {
	g := newGateway(t)
	c := newChecker(t, passcheck.Options{Keys: []ed25519.PublicKey{g.public()}})
	now := time.Now()
	wantRefused(t, c, g.sign(t, "launch", now.Add(-2*time.Minute), now.Add(-time.Minute)), passcheck.ErrExpired)
	if _, err := c.Verify(g.sign(t, "launch", now.Add(-time.Minute), now.Add(-time.Second))); err != nil {
		t.Fatalf("a pass expired a second ago is refused despite the 5 s leeway: %v", err)
	}
	wantRefused(t, c, g.sign(t, "launch", now.Add(time.Minute), now.Add(2*time.Minute)), passcheck.ErrNotYet)
}

func TestVerifyWrongRoom(t *testing.T) {
	g := newGateway(t)
	c := newChecker(t, passcheck.Options{Keys: []ed25519.PublicKey{g.public()}, Rooms: []string{"launch", "sale"}})
	now := time.Now()
	wantRefused(t, c, g.sign(t, "other", now, now.Add(time.Minute)), passcheck.ErrRoom)
	if _, err := c.Verify(g.sign(t, "sale", now, now.Add(time.Minute))); err != nil {
		t.Fatalf("a pass of an accepted room: %v", err)
	}
}

func TestVerifyTamperedPass(t *testing.T) {
	g := newGateway(t)
	c := newChecker(t, passcheck.Options{Keys: []ed25519.PublicKey{g.public()}})
	parts := strings.Split(g.pass(t), ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	forged := strings.Replace(string(payload), `"sub":"42"`, `"sub":"43"`, 1)
	wantRefused(t, c, parts[0]+"."+base64.RawURLEncoding.EncodeToString([]byte(forged))+"."+parts[2], passcheck.ErrSignature)
	other := newGateway(t)
	wantRefused(t, c, parts[0]+"."+parts[1]+"."+strings.Split(other.pass(t), ".")[2], passcheck.ErrSignature)
	wantRefused(t, c, "a.b", passcheck.ErrMalformed)
	wantRefused(t, c, strings.Repeat("a", 10000), passcheck.ErrMalformed)
	wantRefused(t, c, "", passcheck.ErrMissing)
}

// claims are a valid pass's claims, for passes signed by hand.
func claims() jwt.MapClaims {
	now := time.Now().Unix()
	return jwt.MapClaims{"iss": "waitingroom", "aud": "origin", "sub": "42", "jti": "p-1",
		"iat": now, "exp": now + 60, "room": "launch", "mode": "session"}
}

func handSigned(t *testing.T, m jwt.SigningMethod, key any, kid string, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, c)
	tok.Header["kid"] = kid
	raw, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func kidOf(t *testing.T, g gateway) string {
	h, _ := base64.RawURLEncoding.DecodeString(strings.Split(g.pass(t), ".")[0])
	var kid struct{ Kid string }
	_ = json.Unmarshal(h, &kid)
	return kid.Kid
}

// TestVerifyRefusesOtherAlgorithms: alg none, and HS256 keyed with the
// public key (what an attacker knows), are refused.
func TestVerifyRefusesOtherAlgorithms(t *testing.T) {
	g := newGateway(t)
	j := serveJWKS(t, g.signer)
	c := newChecker(t, passcheck.Options{JWKSURL: j.srv.URL})
	kid := kidOf(t, g)
	if _, err := c.Verify(g.pass(t)); err != nil {
		t.Fatal(err)
	}
	none := handSigned(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, kid, claims())
	wantRefused(t, c, none, passcheck.ErrAlgorithm)
	x := base64.RawURLEncoding.EncodeToString(g.public())
	for _, secret := range [][]byte{g.public(), []byte(x), *j.set.Load()} {
		wantRefused(t, c, handSigned(t, jwt.SigningMethodHS256, secret, kid, claims()), passcheck.ErrAlgorithm)
	}
	header := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"EdDSA2","kid":"` + kid + `"}`))
	wantRefused(t, c, header+"."+strings.SplitN(none, ".", 2)[1]+"AAAA", passcheck.ErrAlgorithm)
	if passcheck.Reason(fmt.Errorf("x: %w", passcheck.ErrAlgorithm)) != "algorithm" {
		t.Fatal("Reason does not name a wrapped refusal")
	}
}

// TestVerifyChecksTheClaims: passes correctly signed (by hand) whose
// claims are wrong.
func TestVerifyChecksTheClaims(t *testing.T) {
	g := newGateway(t)
	c := newChecker(t, passcheck.Options{Keys: []ed25519.PublicKey{g.public()}})
	kid := kidOf(t, g)
	for _, tc := range []struct {
		edit   func(jwt.MapClaims)
		reason error
	}{
		{func(m jwt.MapClaims) { m["iss"] = "someone" }, passcheck.ErrIssuer},
		{func(m jwt.MapClaims) { m["aud"] = "waitingroom" }, passcheck.ErrAudience},
		{func(m jwt.MapClaims) { delete(m, "exp") }, passcheck.ErrClaims},
		{func(m jwt.MapClaims) { delete(m, "iat") }, passcheck.ErrClaims},
		{func(m jwt.MapClaims) { delete(m, "sub") }, passcheck.ErrClaims},
		{func(m jwt.MapClaims) { delete(m, "jti") }, passcheck.ErrClaims},
		{func(m jwt.MapClaims) { delete(m, "room") }, passcheck.ErrClaims},
		{func(m jwt.MapClaims) { m["mode"] = "forever" }, passcheck.ErrClaims},
	} {
		m := claims()
		tc.edit(m)
		raw := handSigned(t, jwt.SigningMethodEdDSA, g.key, kid, m)
		wantRefused(t, c, raw, tc.reason)
	}
	if _, err := c.Verify(handSigned(t, jwt.SigningMethodEdDSA, g.key, kid, claims())); err != nil {
		t.Fatalf("the untouched claims: %v", err)
	}
}

// TestUnknownKidTriggersOneRefetch covers rotation as origins see it: the
// gateway signs with a new key and still publishes the old one.
func TestUnknownKidTriggersOneRefetch(t *testing.T) {
	old := newGateway(t)
	j := serveJWKS(t, old.signer)
	c := newChecker(t, passcheck.Options{JWKSURL: j.srv.URL, MinRefresh: 20 * time.Millisecond})
	if j.fetches.Load() != 0 {
		t.Fatal("New fetched the key set")
	}
	oldPass := old.pass(t)
	for range 3 {
		if _, err := c.Verify(oldPass); err != nil {
			t.Fatal(err)
		}
	}
	if n := j.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1 (lazy, then cached)", n)
	}
	time.Sleep(30 * time.Millisecond)
	next := newGateway(t, old)
	j.publish(next.signer)
	if _, err := c.Verify(next.pass(t)); err != nil {
		t.Fatalf("a pass of the new key: %v", err)
	}
	if _, err := c.Verify(oldPass); err != nil {
		t.Fatalf("a pass of the previous key, still published: %v", err)
	}
	if n := j.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2", n)
	}
	time.Sleep(30 * time.Millisecond)
	j.publish(signer(t, next.key)) // the old key is retired
	if _, err := c.Verify(newGateway(t).pass(t)); !errors.Is(err, passcheck.ErrUnknownKey) {
		t.Fatalf("a pass of a key never published: %v", err)
	}
	wantRefused(t, c, oldPass, passcheck.ErrUnknownKey)
}

// TestRefetchThrottle: a flood of passes naming forged kids makes one
// fetch per MinRefresh, however many and however concurrent.
func TestRefetchThrottle(t *testing.T) {
	g := newGateway(t)
	j := serveJWKS(t, g.signer)
	c := newChecker(t, passcheck.Options{JWKSURL: j.srv.URL, MinRefresh: time.Hour})
	forged := make([]string, 8)
	for i := range forged {
		forged[i] = newGateway(t).pass(t)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for _, raw := range forged {
				if _, err := c.Verify(raw); passcheck.Reason(err) != "unknown_kid" {
					t.Errorf("a forged kid: %v", err)
				}
			}
		})
	}
	wg.Wait()
	if n := j.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1", n)
	}
	if _, err := c.Verify(g.pass(t)); err != nil {
		t.Fatalf("the published key after the flood: %v", err)
	}
	next := newGateway(t, g)
	j.publish(next.signer)
	wantRefused(t, c, next.pass(t), passcheck.ErrUnknownKey)
	if n := j.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches within MinRefresh, want 1", n)
	}
}

func TestFetchFailureRefuses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusBadGateway)
	}))
	defer srv.Close()
	c := newChecker(t, passcheck.Options{JWKSURL: srv.URL})
	_, err := c.Verify(newGateway(t).pass(t))
	if !errors.Is(err, passcheck.ErrUnknownKey) || !strings.Contains(err.Error(), "status 502") {
		t.Fatalf("Verify = %v, want unknown key because of status 502", err)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for name, o := range map[string]passcheck.Options{
		"nothing":   {},
		"not a URL": {JWKSURL: "jwks.json"},
		"ftp":       {JWKSURL: "ftp://gateway/jwks.json"},
		"short key": {Keys: []ed25519.PublicKey{make([]byte, 16)}},
	} {
		if _, err := passcheck.New(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestAgreesWithPass: passcheck repeats pass's names (it imports nothing
// of the project), so they must stay equal.
func TestAgreesWithPass(t *testing.T) {
	if passcheck.HeaderName != pass.HeaderName || passcheck.ModeOnce != pass.ModeOnce || passcheck.ModeSession != pass.ModeSession {
		t.Fatal("passcheck's header name or modes differ from pass's")
	}
}

func TestMiddleware(t *testing.T) {
	g := newGateway(t)
	c := newChecker(t, passcheck.Options{Keys: []ed25519.PublicKey{g.public()}})
	h := c.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cl, ok := passcheck.FromContext(r.Context())
		if !ok {
			t.Error("no claims in the context")
			return
		}
		_, _ = io.WriteString(w, cl.Room+" "+cl.Subject)
	}))
	for header, want := range map[string]string{
		"":                    `403 {"error":"pass_required"}`,
		"garbage":             `403 {"error":"pass_required"}`,
		newGateway(t).pass(t): `403 {"error":"pass_required"}`,
		g.pass(t):             "200 launch 42",
	} {
		req := httptest.NewRequest(http.MethodGet, "/checkout", nil)
		if header != "" {
			req.Header.Set(passcheck.HeaderName, header)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if got := fmt.Sprint(rec.Code, " ", rec.Body.String()); got != want {
			t.Errorf("header %.20q: %s, want %s", header, got, want)
		}
		if rec.Code == http.StatusForbidden && rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("refusal content type %q", rec.Header().Get("Content-Type"))
		}
	}
	if _, ok := passcheck.FromContext(httptest.NewRequest(http.MethodGet, "/", nil).Context()); ok {
		t.Fatal("claims in a context the middleware never saw")
	}
}
