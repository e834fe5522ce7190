// Package pgstore owns the waiting room's Postgres data: the schema and its
// embedded migrations, users (login id and BCrypt hash), products (stock) and
// orders, the room definitions the admin API records (roomdefs.go: the
// record a room is created again from when Redis lost it), and the demo
// seed.
//
// The seed system's key figure was how long an order holds a database
// connection, so every method acquires its pooled connection through one
// instrumented helper: the wait for the pool is recorded in
// waitingroom_db_pool_acquire_wait_seconds and the time from acquire to
// release in waitingroom_db_connection_hold_seconds.
//
// Business outcomes are sentinel errors, tested with errors.Is; a value
// the database refuses is an *InputError (ErrInvalidInput); every other
// error is an infrastructure failure, returned wrapped, safe to retry
// (errors.go's opening comment).
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
