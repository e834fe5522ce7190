package passcheck_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"waitingroom/server/pass"
	"waitingroom/server/pass/passcheck"
)

// An origin protects its checkout with the middleware; the waiting room's
// gateway (here a stand-in serving its key set) signs the passes.
func ExampleChecker_Middleware() {
	key, _ := pass.ParseKey(pass.GenerateKey()) // the gateway reads WR_PASS_KEY
	signer, _ := pass.New(pass.Config{Key: key})
	gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_, _ = w.Write(signer.JWKS())
	}))
	defer gateway.Close()

	// The origin.
	check, err := passcheck.New(passcheck.Options{
		JWKSURL: gateway.URL + "/_wr/.well-known/jwks.json",
		Rooms:   []string{"launch"},
	})
	if err != nil {
		log.Fatal(err)
	}
	checkout := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := passcheck.FromContext(r.Context())
		fmt.Fprintf(w, "welcome %s (room %s, %s pass)", c.Subject, c.Room, c.Mode)
	})
	origin := httptest.NewServer(check.Middleware(checkout))
	defer origin.Close()

	// A request without a pass, then one the gateway forwarded.
	now := time.Now()
	raw, _ := signer.Sign(pass.Claims{Room: "launch", Subject: "42", PassID: "8f0c2a",
		Mode: pass.ModeSession, IssuedAt: now, Expiry: now.Add(10 * time.Minute)})
	for _, header := range []string{"", raw} {
		req, _ := http.NewRequest(http.MethodGet, origin.URL+"/checkout", nil)
		if header != "" {
			req.Header.Set(passcheck.HeaderName, header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, string(body))
	}
	// Output:
	// 403 {"error":"pass_required"}
	// 200 welcome 42 (room launch, session pass)
}
