// Package ratelimit is layer 1 of the waiting room: rate limits shared by
// every app instance, decided by one Redis script per request (GCRA, the
// generic cell rate algorithm: one key per limit and subject holding the
// theoretical arrival time, Redis TIME as the clock, the exact time until
// the next allowed request returned on refusal).
//
// Concurrency: a Limiter is safe for concurrent use.
package ratelimit
