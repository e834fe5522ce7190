// Package passcheck is what an origin written in Go imports to check that
// a visitor came through the waiting room. In gateway mode the waiting
// room forwards each protected request of an admitted visitor with the
// header Waitingroom-Pass, a pass it signed (package pass); the gateway
// strips any header of that name sent by the client. A Checker verifies
// the pass against the gateway's published key set; its Middleware
// refuses a request without a valid pass with 403 and
// {"error":"pass_required"}, and gives the handler the pass's claims
// (FromContext).
//
//	check, err := passcheck.New(passcheck.Options{
//		JWKSURL: "https://shop.example/_wr/.well-known/jwks.json",
//		Rooms:   []string{"launch"},
//	})
//	...
//	http.Handle("/checkout/", check.Middleware(checkout))
//
// Keys: the key set is fetched at the first pass to verify and kept; when
// a pass names a key it does not hold (the gateway rotated its key), the
// set is fetched again, at most once per Options.MinRefresh whatever
// arrives. A key the gateway stops publishing stays trusted until the next
// fetch; after a key is compromised, restart the origins.
//
// Imports: the standard library and golang-jwt v5 only, and nothing of
// the waiting room, so that an origin can vendor this directory alone.
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
package passcheck
