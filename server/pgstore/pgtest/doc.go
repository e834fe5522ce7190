// Package pgtest gives each test Postgres state of its own on the real
// server, so integration tests run in parallel without sharing state and
// never touch a database that holds anything else.
//
// URL gives a fresh, empty schema in one shared test database (a few
// milliseconds); DatabaseURL a fresh database (about 300 ms: Postgres
// copies a template), for the tests that act on the database as a whole
// (refuse its connections, terminate its sessions).
//
// The server is found as AdminURL says (from the environment, else
// DefaultURL). A test whose server cannot be reached FAILS with a message
// saying so; it never skips, so a CI run without Postgres cannot pass
// silently. Start the services with `make test`.
//
// Concurrency: both may be called from parallel tests and processes.
package pgtest
