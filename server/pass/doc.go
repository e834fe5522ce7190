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
// Keys: a key is the 32-byte Ed25519 seed, base64 (standard or URL
// alphabet, padded or not). Make one with
//
//	openssl rand -base64 32
//
// (or GenerateKey). A key's id (kid, in every pass's header and in the key
// set) is the first 8 bytes of the SHA-256 of its public key, in hex.
//
// Rotation: cmd reads WR_PASS_KEY (Config.Key, which signs every pass) and
// WR_PASS_KEY_PREVIOUS (Config.Previous: keys that sign nothing but stay
// in the published key set, so origins keep accepting the passes they
// signed until those expire). To rotate without an origin
// ever refusing a pass, even while instances of the gateway run with
// different settings:
//
//  1. publish the new key first: WR_PASS_KEY=old, WR_PASS_KEY_PREVIOUS=new;
//  2. sign with it: WR_PASS_KEY=new, WR_PASS_KEY_PREVIOUS=old;
//  3. once the last pass of the old key has expired: drop it from
//     WR_PASS_KEY_PREVIOUS.
//
// Concurrency: a Signer is safe for concurrent use; its keys and its key
// set are fixed at New.
//
// Imports: the standard library and golang-jwt; never server, never
// passcheck (which imports nothing of the project, so that origins can
// vendor it).
package pass
