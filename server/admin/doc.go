// Package admin owns the management app (WR_ADMIN_ADDR, never the public
// port): /healthz, /readyz, /metrics, the profiles under /debug/pprof, the
// operator dashboard at /admin/ and the admin API under /admin (rooms,
// faults, access), with its bearer-token check and the in-memory throttle
// of failed authentications (throttle.go).
//
// New builds the app from Options: the domain objects it reads and changes
// (the queue, the adaptive controller and its rule, the access lists, the
// faults), the readiness pings, the metrics to serve, and the few request
// helpers that stay the server's (the protocol filter installed first, the
// client address and its key). The package owns the admin API's documents
// (roomDoc, faultsDoc, accessDoc) and the parsing of its request bodies;
// the domain packages own the data and their Redis keys.
//
// Concurrency: the app is safe for concurrent use by Fiber's handlers; the
// throttle's state is guarded by a mutex.
//
// Imports: Fiber, Prometheus, queue, queue/adaptive, web and server's
// sub-packages api, seclog, access and faults; never server.
package admin
