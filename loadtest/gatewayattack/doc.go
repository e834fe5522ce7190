// Package gatewayattack is the gateway-attack scenario: the attack
// scenario's proof for gateway mode (issue 27). The tool starts a net/http
// origin on --origin-listen (127.0.0.1:18090, the server's WR_UPSTREAM)
// that counts every request by path, and every protected one (POST
// /api/orders, GET /checkout/*, GET /members/*, judged as leniently as
// origins route) that came without a valid Waitingroom-Pass (verified
// against the gateway's JWKS), by sender (origin.go). -n (200) anonymous
// visitors, --users-per-addr (5) to an address of 127.1.x.y, arrive over
// --over (10s): challenge and proof of work if asked, enter, poll until
// READY, then --protected with the entry cookie, which must be 2xx; one not
// through within --visitor-bound (2m) is lost (visitor.go).
//
// It runs twice: alone, then beside the attacks from 127.6.k.x (--attacks,
// default all; attacks.go): smuggle (--smuggle upgrades with a protected
// POST pipelined behind), variants (--variant-rounds of 18 spellings of
// the protected routes, without a pass), slow-readers (--slow-readers
// downloads of --download-mib read at --slow-kib KiB/s), bodies (--bodies
// uploads of --body-mib without a pass), session-share (one visitor's
// session in --session-room used from --share-addrs addresses in a closed
// loop) and stuffing (--stuffing-bare enters without a proof,
// --stuffing-solved with one). The report gives per attack the gateway's
// answers and the origin's unpassed count, the visitors' figures of both
// runs, and the server's RSS from /proc/<--server-pid>/status. The bar: 0
// unpassed protected requests at the origin, every visitor through, p95s
// within 2× (or 10 ms) of the baseline, the RSS peak within --rss-slack
// MiB of the baseline's, no tunnel without a 101, the shared session
// within --session-burst + --session-rate over the window, no bare enter
// placed.
package gatewayattack
