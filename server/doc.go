// Package server is the HTTP face of the waiting room: the public API and
// page (Fiber, WR_HTTP_ADDR) and the management endpoints (/metrics,
// /healthz, /readyz, /admin on WR_ADMIN_ADDR, never on the public port).
//
// It wires the three layers of the system for one app instance:
//
//   - identity: login is the only place BCrypt runs, after the user row's
//     pooled connection is back in the pool; it issues an HS256 access
//     token. Enter issues a queue token (room, ticket) that every later
//     call — poll, leave, order — accepts instead: no BCrypt, no SQL there;
//   - the queue (package queue): enter, position, leave, and the admission
//     loop every WR_ADMIT_INTERVAL in every instance;
//   - orders (package checkout, over pgstore and queue): the entry token is
//     consumed atomically before the transaction; the active slot is
//     released when the transaction ends with a business outcome and the
//     token restored after an infrastructure failure, so the user can retry.
//     The handler decodes, calls checkout.Place and maps its result.
//
// Sub-packages own what is not HTTP: access (the deny/allow/bypass lists,
// their Redis keys and refresh loop), faults (fault injection, its Redis key
// and refresh loop), checkout (the order use case), login (the login use
// case: its limits, BCrypt in bounded slots), listener (the public
// port's connections below HTTP: the connection ceiling, the per-address
// cap, the first-request deadline, the header-line guard), token (the
// JWTs: claims, issue and verify, the verified cache, key rotation),
// pgstore (Postgres), ratelimit (GCRA limits in Redis). They never import server; server holds
// their public HTTP side (middleware, handlers). Periodic loops use
// queue/loop. admin is the management app, whole: routes, auth, throttle, dashboard, admin API.
//
// Errors: handlers return errors; errors.go maps the packages' sentinel
// errors to the contract's statuses and JSON form in one table. Anything
// unknown is a 500 with a generic message and the detail in the log.
//
// Concurrency: a Server is safe for concurrent use by Fiber's handlers. Serve
// owns its goroutines (the two listeners) and stops them before it returns.
// The background loops (Loops: admission, hub, access, presence, signals,
// controller, faults) are not Serve's: the composition root
// (cmd/waitingroom) starts them with loop.Start
// before Serve and stops them after it, then closes Redis and Postgres.
//
// Imports: queue, stream, web and server's own sub-packages; never cmd.
package server
