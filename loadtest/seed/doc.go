// Package seed is the seed scenario: the seed system's own k6 test,
// repeated. --vus (20) virtual users log in once as user1…userN, two at a
// time (a 503, every BCrypt slot busy, is retried), then loop for
// --duration (60s): enter → poll position every 0.5 s → on READY order one
// unit of --product → enter again; a 404 poll re-enters. /metrics is
// scraped before and after: the connection hold is Δsum/Δcount of
// waitingroom_db_connection_hold_seconds, its max the bound of the highest
// bucket that gained samples.
//
// The report sets orders, failed orders, status codes, p50/p90/p95/p99/max
// per endpoint and polls lost to 404 next to the seed's published figures.
// 429s are layer 1's refusals, counted apart from failed orders (refused429
// in the JSON); when there are any the report says why and how to run
// without them: the seed's figures were measured with WR_RATE_LIMITS=off.
// A progress line goes to stderr every 5 s.
package seed
