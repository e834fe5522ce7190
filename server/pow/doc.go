// Package pow owns the proof-of-work challenges a room may require before
// an anonymous visitor enters (gateway mode, a room's "challenge: pow"):
// issuing them, verifying a solution in O(1), refusing replays, and the
// reference solver.
//
// A challenge is a signed token, not server state: Issue does no I/O. The
// token (token.go) carries a version, the room, the subject (the visitor),
// 16 random bytes of nonce, the expiry and the difficulty, with an
// HMAC-SHA256 of them under a secret every instance shares; it is URL-safe
// base64. The client finds a decimal counter such that
// SHA-256(token + ":" + counter) starts with at least difficulty zero bits
// (2^difficulty hashes on average) and sends it back with the token.
//
// Verify checks the format and the HMAC before any I/O, then spends a
// solution that passes (SET NX on a key per nonce, under the room's hash
// tag): a key already there is a replay (pow.go's opening comment has the
// order of the checks). The page solves in a Web Worker with the same
// search as Solve (solve.go's opening comment has the measured costs that
// set DefaultDifficulty). Rise and Burst are the difficulty's rise with a
// network's count of new places (rise.go).
//
// Concurrency: a Pow is safe for concurrent use; it holds no mutable state
// (the replay keys live in Redis).
package pow
