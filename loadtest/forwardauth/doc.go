// Package forwardauth is the forward-auth scenario: what a decision of
// /_wr/auth costs, what nginx's auth_request adds to a request, and what
// the gateway costs in nginx's place in front of the same origin. One
// command starts everything on this machine, each a process of its own:
// the waiting room (--server-bin, else built from waitingroom/cmd/waitingroom)
// with WR_FORWARD_AUTH=on, WR_TRUSTED_PROXIES=127.0.0.1 and room --room
// (sale) protecting GET /checkout/*, on Redis alone (--redis, database
// --redis-db, which must be empty and is emptied at the end; no
// Postgres); an origin, an nginx serving one 1 KiB static page for every
// path (origin.conf); the proxy, nginx from the shipped
// deploy/forward-auth/nginx.conf.template (--nginx-template) as shops
// run it; nginx → origin, the same file with its auth_request line off;
// and a second waiting room in gateway mode (WR_UPSTREAM the origin, the
// same room and route) on the next database (--redis-db + 1, empty too).
// The common --base, --admin and --admin-token are not used.
//
// First --visitors visitors each enter the room, poll until READY and ask
// /_wr/auth once about the protected path: the answer's Set-Cookie is the
// visit (a visit's decisions are bounded by the room's sessionInFlight
// per 200 ms, which the scenario raises to its most, 1,000, so that the
// closed loop measures decisions, not that bound); as many visitors enter
// the gateway's room and make a first protected request through it, whose
// Set-Cookie is their visit. Then seven phases (decide: unprotected /
// protected, visit; nginx → origin; nginx auth: unprotected / protected,
// visit; gateway: unprotected / protected, visit), each --conns (64)
// keep-alive connections in a closed loop for --warmup (2s) unmeasured
// and --duration (10s) measured, connection i with visitor i mod
// --visitors's cookies. Each reports requests/s, latency and each process's CPU per
// request; the checks are counts. The phases, the checks and how to read
// them: docs/bench/forward-auth.md.
package forwardauth
