// Package admin owns the management app (the management port, never the
// public one): /healthz, /readyz, /metrics, the profiles under
// /debug/pprof, the operator dashboard at /admin/ (GET / leads there) and
// the admin API under /admin (rooms — paged, changed, deleted — and their
// history, faults, access, stats, the audit log), with its bearer-token
// check and the in-memory throttle of failed authentications (throttle.go).
//
// New builds the app from Options: the domain objects it reads and changes
// (the queue, the adaptive controller and its rule, the access lists, the
// faults, the rooms' history, the audit log), the readiness pings, the
// metrics to serve, and the few request helpers that stay the server's (the
// protocol filter installed first, the client address and its key). The
// package owns the admin API's documents (roomDoc, faultsDoc, accessDoc,
// statsDoc) and the parsing of its request bodies; the domain packages own
// the data and their Redis keys.
//
// The rooms' definitions are recorded in Postgres beside Redis
// (Definitions): PUT records the room's, DELETE removes it first, so a
// room the admin API made outlives a Redis that lost its data. An instance
// without Postgres has none: its changes are made in Redis alone, and PUT
// says so in a header (HeaderDefinition).
//
// Every successful PUT and DELETE under /admin is audited by one middleware
// (changes.go), which reads the resource's GET document before and after
// the handler through the app's own routes; handlers know nothing of it.
// Sub-package audit keeps the log.
//
// Concurrency: the app is safe for concurrent use by Fiber's handlers; the
// throttle's state is guarded by a mutex.
package admin
