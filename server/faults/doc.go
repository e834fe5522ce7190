// Package faults owns fault injection, for tests and demos of adaptive
// admission: an order-path delay that the order transaction sleeps
// (pg_sleep), so it really holds a pool connection, as a slow database
// would.
//
// The delay is set through the admin API, stored in Redis (one hash,
// "<prefix>faults", built in keys.go) and read by every instance twice a
// second (Faults.Run), so a change on one instance is in force on all
// within RefreshEvery. An instance started without fault injection (New's
// enabled false) refuses to set it (ErrDisabled) and never applies it,
// whatever Redis holds.
//
// Concurrency: a Faults is safe for concurrent use; OrderDelay reads an
// atomic copy, Run loads on the caller's goroutine until its context is
// done. While Redis is unreachable the last delay stays in force.
package faults
