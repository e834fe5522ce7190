// Package pgtest gives each test its own fresh, empty Postgres database on
// the real server, so integration tests run in parallel without sharing
// state and never touch a database that holds anything else.
//
// The server is found through WR_TEST_DATABASE_URL, else DATABASE_URL, else
// DefaultURL. A test whose server cannot be reached FAILS with a message
// saying so; it never skips, so a CI run without Postgres cannot pass
// silently. Start the services with `make test`.
//
// Concurrency: URL may be called from parallel tests; each call creates a
// database of its own.
package pgtest
