// Package surge is the surge scenario: the contract's last bar, a crowd at
// opening time. -n (10,000) users arrive, the --burst share (80%) evenly
// over --over (10s), the rest at random within --trickle-over (60s); each
// enters (retried on 429, 503 or no answer: enter is idempotent), then
// waits by --transport sse, ws, poll (GET position every pollAfterMs) or
// mix (the three in turn); a stream that ends without READY or gone is
// opened again, up to 3 times, then the user polls. Access tokens are
// logged in (BCrypt) or minted before the clock starts (--mint-tokens
// assumes a freshly seeded database, where userK has id K).
//
// The shoppers behave like people, one seeded draw each (shoppers.go): the
// --abandons share (5%) stops waiting within --patience (60s) of entering,
// without a leave, as a closed tab; the --reloads share (10%) reloads once
// within --patience (the connection dropped, a GET position, a new stream with
// the same queue token); on READY the --no-shows share (10%) never orders, the
// others think for a log-normal time (--think-median 5s, --think-sigma 0.6, at
// most 80 % of the entry window) and order one unit of --product (retried only
// on 429 or 503). --instant makes them machines: all over --over, ordering at
// once, nobody leaving. --users-per-addr k deals the users k to a source
// address of 127.1.x.y; --target sets targetActive for the run (restored at
// the end); --max-duration (5m) ends it, drained or not. The admin API is
// sampled every --sample-every (100ms), /metrics every second. The report:
// enter latency and errors, the time to the last READY, the maximum active
// against targetActive, FIFO inversions (admissions.go), the ETA's accuracy at
// entry and over the wait, by position band and per second (etaaccuracy.go),
// no-shows, abandons, reloads, fan-out lag, lost users (never READY nor told
// why; those still waiting at --max-duration count), the server's RSS and CPU,
// the tool's CPU and the machine's load average; --html writes one
// self-contained page with charts over time (html.go).
package surge
