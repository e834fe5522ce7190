// Package token owns the waiting room's JWTs: the claims of both kinds
// (access tokens from login, queue tokens from enter), issuing them,
// verifying them (HS256 only, a known kid, exp required, iat not in the
// future, issuer, audience and kind checked), the cache of tokens already
// verified, key rotation (Config.Previous) and the classification of a
// refusal for the security log (Reason).
//
// Every failure is ErrInvalid (wrapping the cause); the server answers it
// with 401 and logs Reason's word, never the token.
//
// Concurrency: an Issuer is safe for concurrent use; its keys are fixed at
// New and the verified cache is sharded, each shard under its own lock.
package token
