// Package ratelimit is layer 1 of the waiting room: rate limits shared by
// every app instance, decided by one Redis script per request (GCRA, the
// generic cell rate algorithm: one key per limit and subject holding the
// theoretical arrival time, Redis TIME as the clock, the exact time until
// the next allowed request returned on refusal).
//
// Beside Allow (decide and record one request) a Limiter offers the
// primitives of limits that count only some requests, such as failed
// logins: Peek decides without recording, Take reserves one request on
// several limits at once (all or nothing), Refund gives a reservation back,
// Charge records a request found to count after the work, and every Result
// tells whether its subject is in debt (has recorded requests that time has
// not yet paid back). Inline hands Take's decision to a script of another
// package, which runs it first (InlineLua) and does its own work only when
// every limit allows: the decision and the work it guards in one script
// (an Inline is the enter script's queue.Guard; its refusal reads as a
// *RefusedError).
//
// Concurrency: a Limiter is safe for concurrent use.
package ratelimit
