// Package httplimit applies layer 1's rate limits (package ratelimit) to
// the public app's requests: whether a request is limited at all (the
// limits on, its address and user not on the allow list), the shared
// decisions of one or several limits at once with each limit's policy
// when Redis cannot decide (fail open or closed), the poll pace kept in
// the instance's memory, and the refusal: 429 with the contract's JSON
// and Retry-After, counted by limit and recorded as a security event.
// httplimit.go's opening comment lists every limit and its policy.
//
// Concurrency: Limits are safe for concurrent use.
package httplimit
