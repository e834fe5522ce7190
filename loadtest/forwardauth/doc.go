// Package forwardauth is the forward-auth scenario: what a decision of
// /_wr/auth costs, and what nginx's auth_request adds to a request. One
// command starts everything on this machine, each a process of its own:
// the waiting room (--server-bin, else built from waitingroom/cmd/waitingroom)
// with WR_FORWARD_AUTH=on, WR_TRUSTED_PROXIES=127.0.0.1 and room --room
// (sale) protecting GET /checkout/*, on Redis alone (--redis, database
// --redis-db, which must be empty and is emptied at the end; no
// Postgres); an origin, an nginx serving one 1 KiB static page for every
// path (origin.conf); the proxy, nginx from the shipped
// deploy/forward-auth/nginx.conf.template (--nginx-template) as shops
// run it; and nginx → origin, the same file with its auth_request line
// off. The common --base, --admin and --admin-token are not used.
//
// First --visitors visitors (one per connection) each enter the room
// anonymously, poll until READY and ask /_wr/auth once about the
// protected path: the answer's Set-Cookie is the visit. (A visit's
// decisions are bounded by the room's sessionInFlight per 200 ms, which
// the scenario raises to its most, 1,000, so that the closed loop
// measures decisions, not that bound.) Then
// five phases, each --conns (64) keep-alive connections in a closed loop
// for --warmup (2s) unmeasured and --duration (10s) measured, connection
// i with the cookies of visitor i mod --visitors:
//
//	decide: unprotected           GET /_wr/auth about GET /products/1, asked from 127.0.0.1
//	decide: protected, visit      the same about GET /checkout/cart
//	nginx → origin                GET /products/1 through the template without auth_request
//	nginx auth: unprotected       GET /products/1 through auth_request
//	nginx auth: protected, visit  GET /checkout/cart through auth_request
//
// Each phase reports requests/s, latency percentiles and the CPU time per
// request of each process (utime + stime from /proc/<pid>/stat, an nginx's
// workers included) and of the machine (/proc/stat). Read: decisions/s and
// the waiting room's µs per decision from the first two; the overhead of
// forward auth as the auth phases' requests/s ÷ nginx → origin's, and as
// the serving side's CPU per request (waiting room, proxy, origin) less
// its. The load tool shares the CPUs with everything it measures, so the
// rates are the machine's: compare within one run. The checks are
// counts: every answer 200, the waiting room's own count of decisions
// (waitingroom_gateway_requests_total) equal to the requests that ask it
// and 0 for nginx → origin, a pass on every protected answer (the origin
// says whether the pass reached it) and none elsewhere, no cookie set.
package forwardauth
