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
// Verify checks, in this order and before any I/O: the format and the
// HMAC (constant time), the room and the subject, the expiry, the
// difficulty (1 to 32), the solution (at most 20 digits) and the work.
// Only a solution that passes all of them spends the challenge: SET NX PX
// on "<prefix>pow:{<room>}:<nonce>" for the challenge's remaining lifetime
// (the room is the Redis Cluster hash tag); a key already there is a
// replay. Refusals are ErrInvalid with a fixed word for the log (Reason);
// Redis unreachable is ErrUnavailable, and the caller fails closed.
//
// The page solves in a Web Worker (web/static/pow-worker.js) with the same
// search as Solve: counters 0, 1, 2, … in turn, so both find the same
// solution (worker_test.go checks it in headless Chromium against
// Verify). The worker is a script from the page's own origin, which the
// page's Content-Security-Policy already allows (worker-src falls back to
// script-src 'self').
//
// Cost, measured on the development machine (2 shared cores; BENCHMARKS.md): in headless Chromium (WR_POW_MEASURE=1 go test
// -count=1 -run TestMeasureWorker -v ./server/pow/) the worker hashed about
// 2.7 M/s on a quiet machine and crypto.subtle.digest about 0.16 M/s,
// hence the worker's own SHA-256; under load it hashed far less (0.15 M/s
// at a load average of 19), and the page's median solve at 22 bits took
// 1.0 s quiet but 6.5 s loaded, hence DefaultDifficulty 20. Solve, in Go
// with the CPU's SHA instructions, hashes 8–16 M per CPU-second
// (BenchmarkSolve): a bot pays 2^20 hashes, about 0.1 CPU-seconds, per
// entry at the default. Verify costs one HMAC, one SHA-256 and one Redis
// round trip (BenchmarkVerify).
//
// Concurrency: a Pow is safe for concurrent use; it holds no mutable state
// (the replay keys live in Redis).
//
// Imports: the standard library and go-redis; never server.
package pow
