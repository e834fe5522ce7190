// Command loadtest is the waiting room's load tool. It drives a running
// instance over HTTP (net/http as the client), measures what the contract's
// performance bars talk about, and prints a report; --out also saves it as
// JSON.
//
//	go run ./loadtest <scenario> [flags]
//	make loadtest ARGS="seed --duration 60s"
//
// Scenarios:
//
//   - seed: the seed system's own k6 test, repeated. --vus (20) virtual users
//     log in once as user1…userN, then loop for --duration (60s): enter →
//     poll position every 0.5 s → on READY order one unit of --product →
//     enter again; a 404 poll re-enters. /metrics is scraped before and
//     after, and the connection hold is Δsum/Δcount of
//     waitingroom_db_connection_hold_seconds, its max the bound of the
//     highest bucket that gained samples. The report puts orders, failed
//     orders, status codes and p50/p90/p95/p99/max per endpoint, and polls
//     lost to 404 next to the seed's published figures. 429s are layer 1's
//     refusals, counted apart from failed orders (refused429 in the JSON);
//     when there are any the report says why and how to run without them
//     (the seed's figures were measured with WR_RATE_LIMITS=off). The
//     users log in two at a time, a 503 (BCrypt slots busy) retried. A
//     progress line goes to stderr every 5 s.
//
//   - poll: the poll path's throughput against a yardstick, in one run.
//     It freezes the room's admission (targetActive 0, restored at the end),
//     logs in and enters --users (50) users, and drives GET position with
//     --conns (64) closed-loop connections for --duration (10s) — first
//     against the server, then against a plain Fiber JSON handler started
//     in-process (--baseline-process: in a process of its own, as the
//     server runs) whose body is the same size. It reports req/s, p50 and p99
//     of each and their ratio (the bar: ≥ 0.5), then measures login
//     (BCrypt) throughput with --login-conns (4) for --login-duration (3s)
//     and prints the per-request cost ratio (1/login rps) ÷ (1/poll rps):
//     what a poll cost in the seed, which ran BCrypt on every poll, over
//     what it costs here. --enter adds POST enter against a yardstick of
//     enter's body size: users already waiting (the pollers again) and
//     fresh users (new ids from --enter-first-id, minted: --mint-tokens).
//     --mode open replaces the closed loop by the crowd as it polls: each
//     of --users polls pollAfterMs after its answer (Retry-After after a
//     429), first within --spread (5s), for --duration; run it with the
//     limits on to see what they cost as they would occur. --redis URL
//     reads Redis's INFO before and after each measured server phase and
//     reports round trips, commands, scripts and Redis CPU per request (pollopen.go,
//     pollenter.go, redisstats.go); each server phase also reports the
//     server's CPU per answer (process_cpu_seconds_total).
//
//   - ceiling: one room on one Redis shard, with no server. It drives the
//     Redis of --redis directly through package queue, under a key prefix
//     of its own that it deletes at the end. --conns (1,2,4,8,16)
//     connections each send pipelines of --pipeline (100) fresh users'
//     enter scripts (queue.Enters) for --duration (3s) per step, with a
//     fresh room each step. It stops once the rate has not risen by 5 %
//     twice in a row, and reports enters/s and Redis's CPU ÷ wall time
//     (1.00 is one core busy). --costs fills a room with --waiting
//     (100,000) users, then measures --ops (20,000) operations of each
//     kind the server makes (ceilingcosts.go): Redis used_cpu,
//     commandstats usec and commands per operation. The kinds the server
//     batches go in pipelines of --depth (10). --fill N reports used_memory
//     per waiting user. The figures feed BENCHMARKS.md, "Capacity model".
//
//   - streams: push at scale. It freezes admission (targetActive 0), makes
//     -n (10,000) users user<--first-user>… enter — with --mint-tokens
//     their access tokens are minted from the server's secret
//     (--jwt-secret or $WR_JWT_SECRET) instead of N BCrypt logins — and
//     opens one stream per user, --conns (64) at a time: --transport sse
//     (GET events, Bearer queue token, parsed by stream/sse) or ws (GET
//     ws?token=). Each stream is one goroutine on one connection with
//     4 KiB buffers. Then it sets targetActive to --target (20) for
//     --duration (60s): every stream that gets READY closes and orders
//     one unit of --product, which frees the slot. Fan-out lag is the
//     receive time − the event's "ts" (the admission's publish time) for
//     every status event after the on-connect one, by position band. A
//     stream silent for --idle (45s; heartbeats count) or closed without
//     gone counts as dropped. /metrics is read before the streams open,
//     with them open and at the end: RSS per stream and the server's CPU.
//     The report sets the figures next to the contract's bars (10,000
//     streams: lag p99 ≤ 250 ms, ≤ 30 KiB RSS per stream). At the end the
//     streams close, the users who did not order leave, and targetActive
//     is restored.
//
//   - surge: the contract's last bar, a crowd at opening time. -n (10,000)
//     users arrive: the --burst share (80%) evenly over --over (10s), the
//     rest at random within --trickle-over (60s) of the opening; each
//     enters (retried on 429, 503 or no answer: enter is idempotent), then
//     waits by --transport: sse, ws, poll (GET position every pollAfterMs)
//     or mix (sse, ws, poll in turn); a stream that ends without READY or
//     gone is opened again, up to 3 times, then the user polls. The
//     shoppers behave like people (surgeshoppers.go, one seeded draw per
//     user): the --abandons share (5%) stops waiting at a random point
//     within --patience (60s) of entering — the stream closed or the polls
//     stopped, without a leave, as a closed tab; the --reloads share (10%)
//     reloads once within --patience: the connection dropped, a GET
//     position, a new stream with the same queue token. On READY the
//     --no-shows share (10%) never orders (the entry window expires); the
//     others think for a log-normal time (--think-median 5s,
//     --think-sigma 0.6, at most 80 % of the entry window), then order one
//     unit of --product (retried only when the server answered 429 or
//     503). --instant makes them machines, the tool's older crowd: all
//     over --over, ordering at once, nobody leaving. Access tokens are logged in (BCrypt) or minted before the
//     clock starts. --target sets targetActive for the run (restored at
//     the end); --max-duration (5m) ends it, drained or not. The admin
//     API is sampled every --sample-every (100ms) and /metrics every
//     second. The report: enter latency and errors (users who failed, and
//     requests answered 429/5xx or not at all, retries included); the
//     time until the last READY; the maximum active sampled against
//     targetActive; FIFO inversions — pairs with a smaller ticket (the
//     queue token's "seq") admitted strictly later, the admission time
//     being entryExpiresAt − entryTtl on Redis's clock, counted by merge
//     sort; ETA accuracy at entry — |etaSeconds at entry − (admission −
//     entry)| ÷ max(real wait, 1 s), median and p90 — and over the whole
//     wait: every WAITING status a user was shown (enter, each push, each
//     poll or reload answer) against the wait that really remained,
//     |eta − (admission − shown)| ÷ (admission − shown), those shown less
//     than 1 s before the admission skipped, withheld ones counted apart;
//     median and p90 overall and per position band (1–100, 101–1000,
//     >1000), and per second shown for the charts (etaaccuracy.go); the
//     no-shows, abandons and reloads; fan-out lag of pushed events;
//     lost users (entered, never READY, never told why by gone or 404;
//     users still waiting at --max-duration count as lost); the server's
//     RSS and CPU, the tool's own CPU, and the machine's load average.
//     A progress line is refreshed in place on a terminal, printed every
//     5 s otherwise. --html writes the report as one self-contained page
//     with inline SVG charts over time. --users-per-addr k deals the users
//     k to a loopback source address (127.1.0.1, 127.1.0.2, …), each
//     address with its own connections, as a real sale's crowd comes from
//     many addresses: per-address limits then meet it as in production.
//
//   - attack: the proof that no single client can take the room down. It
//     runs the surge (every surge flag applies; --users-per-addr defaults
//     to 4, and the shoppers to --instant's machines, so every legitimate
//     user orders; --mint-tokens is required, so the crowd costs no BCrypt) twice
//     on the same room: first alone, the baseline; then, once the room has
//     drained (--drain-wait, 30s), the same surge with attacks beside it
//     from other source addresses, 127.2.x.y, for the --attack-for window
//     (default --over). The server keeps its rate limits on. The attacks,
//     chosen by --attacks (default all; an intensity of 0 also turns one
//     off), each bounded by count and time:
//     stuffing — --stuffing (300) wrong-password logins from
//     --stuffing-addrs (3) addresses, every 4th to one account (the first
//     attacker account, user<--attack-first-user>, default the one after
//     the crowd's), the rest over the crowd's loginIds; then that
//     account's owner logs in with the right password from a fresh
//     address (127.3.0.1): it must succeed.
//     storm — --storm-tokens (3) queue tokens that join when the crowd has
//     arrived poll their position in a closed loop for the window (at most
//     --storm-requests).
//     idle — --idle-sockets (400) sockets from one address, half silent,
//     half with half a request line; 2 s after --conn-deadline (5s, the
//     server's deadline for a first request) those still open are counted.
//     streams — one user opens --stream-flood (30) SSE streams with one
//     queue token and holds them; 2 s after the last, those still open
//     are counted against --max-streams (3).
//     bomb — --bombs (3) bodies of a few hundred bytes that inflate, gzip in
//     gzip, to --bomb-mib (256) MiB, sent with Content-Encoding: gzip,
//     gzip to login, orders and the admin API (with the admin token) in
//     turn.
//     cross-site — a victim enters; --cross-site (3) WebSocket handshakes
//     and as many form POSTs to leave carry only its cookie, Origin
//     https://evil.example and Sec-Fetch-Site: cross-site; then the
//     victim's position tells whether its place survived.
//     The report puts the legitimate users' figures of both runs side by
//     side — enter p50/p99, errors, lost users, FIFO inversions, fan-out
//     lag p99, drain time, server RSS and CPU, BCrypt verifications
//     (Δ waitingroom_bcrypt_seconds_count) — with what each attack sent,
//     the answers by status and what it achieved (connections and streams
//     held, the owner's login, the victim's place, RSS around the bombs),
//     and the bar: with every attack on, 0 errors, 0 lost, 0 inversions,
//     enter p99 within 2× of the baseline, server RSS at most the
//     baseline's + --rss-slack (64) MiB; each attack refused as the
//     server's defences should (stuffing 429 before BCrypt and the owner
//     let in, idle sockets closed by the deadline, ≤ --max-streams held,
//     bombs 415 or 413, cross-site 403 and the place kept). The attackers
//     leave the queue at the end. The database needs the crowd plus
//     3 + --storm-tokens accounts (`seed --users` -n + 100).
//
//   - gateway-attack: the same proof for gateway mode (issue 27). The tool
//     starts a Go net/http origin on --origin-listen (127.0.0.1:18090, the
//     server's WR_UPSTREAM) that counts every request by path and every
//     protected one (POST /api/orders, GET /checkout/*, GET /members/*,
//     judged as leniently as origins route) that came without a valid
//     Waitingroom-Pass (verified against the gateway's JWKS), by sender
//     (the gateway's X-Forwarded-For; a tunnel's bytes have none). -n (200)
//     anonymous visitors, --users-per-addr (5) to an address of 127.1.x.y
//     (one /24 each), arrive over --over (10s): challenge and pow.Solve if
//     asked, enter (429 and challenge_invalid retried as the page does),
//     poll at pollAfterMs until READY, then --protected (POST /api/orders)
//     with the entry cookie, which must be 2xx; one not through within
//     --visitor-bound (2m) is lost. Twice: alone, then beside the attacks
//     from 127.6.k.x (--attacks, default all): smuggle — --smuggle (20)
//     upgrades on /hello with a protected POST pipelined behind; variants —
//     --variant-rounds (3) of 18 spellings of the protected routes
//     (/API/orders/, /api//orders, ;x=1, .json, %2F, ..) without a pass,
//     written byte for byte; slow-readers — --slow-readers (6) downloads of
//     --download-mib (100) MiB with a Content-Length read at --slow-kib (64)
//     KiB/s for --attack-for; bodies — --bodies (4) uploads of --body-mib
//     (16) MiB to the protected path without a pass and as many to
//     /upload; session-share — one visitor admitted to --session-room
//     (club, set to pass mode session through the admin API) opens its
//     session, then --share-addrs (8) addresses use its cookie in a closed
//     loop for --attack-for; stuffing — --stuffing-bare (200) enters of
//     fresh visitors without a proof and --stuffing-solved (40) with one,
//     from --stuffing-addrs (3) addresses. It reports per attack the
//     gateway's answers and the origin's unpassed count, the visitors'
//     completed, errors, lost and p50/p95 of enter→READY and of the
//     protected request for both runs, and the server's RSS before, peak
//     and after from /proc/<--server-pid>/status; the bar: 0 unpassed
//     protected requests at the origin, every visitor through, p95s within
//     2× (or 10 ms) of the baseline, RSS peak within --rss-slack (64) MiB of
//     the baseline's, no tunnel without a 101, the shared session within
//     --session-burst (60) + --session-rate (10/s) over the window, no bare
//     enter placed. deploy/attack-beside-surge.sh --gateway N runs it.
//
// Common flags: --base (http://127.0.0.1:8080), --admin
// (http://127.0.0.1:8081, for /metrics and /admin), --admin-token (default
// $WR_ADMIN_TOKEN), --room (default), --timeout (10s), --out (JSON),
// --html (an HTML page needing no network: charts for surge, the printed
// report for the others).
//
// The server needs demo data (`waitingroom seed --users 10000 --password
// demo-pass --products 1 --stock 100000000`); the poll benchmark's closed
// loop wants WR_RATE_LIMITS=off so that layer 1 does not answer for the
// poll path (its open loop is made for the limits on).
// streams and surge --mint-tokens assume a freshly seeded database, where
// userK has id K.
//
// Connections: the tool lifts RLIMIT_NOFILE to the hard limit, and toward a
// loopback target its dialer spreads connections over source addresses
// 127.0.0.2, 127.0.0.3, … so that tens of thousands of them do not exhaust
// one source address's ephemeral ports. With --users-per-addr the crowd
// uses 127.1.x.y instead, one address per group of users; the attack
// scenario's attackers use 127.2.x.y and 127.3.0.1, gateway-attack's
// 127.6.x.y: the ranges never overlap.
//
// Every loop is bounded by count and by time and ends by itself. Ctrl-C ends
// a run early and the report of what was measured is still printed (a
// second Ctrl-C kills the process). The load generator runs on the same
// machine as the server — on the reference machine, 2 cores — so the
// figures to compare are ratios within one run, never absolute rates
// across machines.
//
// Files: main.go parses the common flags and dispatches; one file per
// scenario (seed.go, poll.go, streams.go, surge.go with surgewait.go and
// surgeshoppers.go, attack.go), its report
// beside it (streamsreport.go; surgecollect.go turns a surge's records into
// surgereport.go's report; attackreport.go; htmlreport.go the --html page);
// the attacks one to a file (attack_stuffing.go, attack_storm.go,
// attack_idle.go, attack_streams.go, attack_bomb.go, attack_crosssite.go,
// sharing attacker.go); gateway-attack in gatewayattack.go, its visitors,
// attacks, origin and report in gatewayattack_*.go. Shared pieces: client.go (HTTP clients, the API and
// admin API), crowd.go (source addresses), streamconn.go (SSE and WebSocket
// streams), mint.go (access tokens), stats.go (latencies by endpoint and
// status), surgesample.go (admin API and /metrics sampling),
// admissions.go (FIFO inversions, ETA accuracy at entry), etaaccuracy.go
// (ETA accuracy over the wait), metrics.go (reading
// /metrics with expfmt) and histogram.go (histogram snapshots).
package main
