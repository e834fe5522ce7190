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
// It depends on the standard library and golang-jwt v5 alone, nothing of
// the waiting room, so that an origin can vendor this directory.
//
// The Checker type's doc says how to verify a pass in another language.
package passcheck
