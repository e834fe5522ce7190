// Package pass owns the gateway's signed passes: the Ed25519 keys, signing
// a pass for an admitted visitor and the key set published for origins.
//
// In gateway mode the waiting room is a reverse proxy in front of an
// origin. When it forwards a protected request of an admitted visitor it
// sets the request header HeaderName ("Waitingroom-Pass") to a pass signed
// here: a compact JWT (EdDSA) naming the room, the visitor (sub), the pass
// (jti), its mode and its lifetime. The gateway first strips any header of
// that name sent by the client, so the only pass an origin ever sees is
// one the gateway set. The origin checks it for itself against the key set
// (JWKS) the gateway publishes; package passcheck does that for an origin
// written in Go, and its doc says how to do it in any other language.
//
// Keys are 32-byte Ed25519 seeds in base64 (Config.Key signs; the keys of
// Config.Previous only stay published): key.go's opening comment
// says how to make one and how to rotate them without an origin ever
// refusing a pass.
//
// Concurrency: a Signer is safe for concurrent use; its keys and its key
// set are fixed at New.
package pass
