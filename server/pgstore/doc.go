// Package pgstore owns the waiting room's Postgres data: the schema and its
// embedded migrations, users (login id and BCrypt hash), products (stock) and
// orders, and the demo seed.
//
// The seed system's key figure was how long an order holds a database
// connection, so every method acquires its pooled connection through one
// instrumented helper: the wait for the pool is recorded in
// waitingroom_db_pool_acquire_wait_seconds and the time from acquire to
// release in waitingroom_db_connection_hold_seconds.
//
// # Errors
//
// Business outcomes are sentinel errors (ErrUserNotFound, ErrProductNotFound,
// ErrOutOfStock, ErrInvalidQuantity), tested with errors.Is. A value the
// database refuses (SQLSTATE class 22: invalid encoding, out of range, wrong
// format) is an *InputError matching ErrInvalidInput: the caller's input at
// fault, mapped from the SQLSTATE in one place (mapErr). Every other error
// is an infrastructure failure (pool exhausted past the context deadline,
// connection refused or lost, statement timeout) and is returned wrapped, never
// as a sentinel, so a caller can tell "the order was refused" from "the
// database could not answer" — the latter is safe to retry.
//
// # Concurrency
//
// A *Store is safe for concurrent use by any number of goroutines. Each method
// holds exactly one pooled connection, only for the duration of its own SQL,
// and returns it to the pool before it returns: no connection is ever held
// while the caller computes (Credentials in particular releases its connection
// before the caller runs BCrypt). Open may run concurrently in several
// processes against one database; migrations are serialised by a
// transaction-scoped advisory lock.
package pgstore
