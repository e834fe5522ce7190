// Package attack is the attack scenario: the proof that no single client
// can take the room down. It runs the surge (package surge: every surge
// flag applies; --users-per-addr defaults to 4 and the shoppers to
// --instant's machines, so every legitimate user orders; --mint-tokens is
// required, so the crowd costs no BCrypt) twice on the same room: alone,
// the baseline, then — once the room has drained (--drain-wait, 30s) —
// beside attacks from other source addresses for the --attack-for window
// (default --over), the server's rate limits on. --attacks chooses them
// (default all; an intensity of 0 also turns one off), each bounded by
// count and time, one to a file:
//
//   - stuffing: --stuffing (300) wrong-password logins, every 4th to one
//     account, then its owner's right one from a fresh address (127.3.0.1)
//   - storm: --storm-tokens (3) queue tokens polling in a closed loop
//   - idle: --idle-sockets (400) sockets, half silent, half with half a
//     request line, counted 2 s after --conn-deadline (5s)
//   - streams: --stream-flood (30) SSE streams of one queue token
//   - bomb: --bombs (3) gzip-in-gzip bodies inflating to --bomb-mib (256)
//   - cross-site: --cross-site (3) WebSocket handshakes and form POSTs with
//     only a victim's cookie and a foreign Origin; then the victim's place
//
// The report sets the legitimate users' figures of both runs side by side
// with what each attack sent, how it was answered and what it achieved.
// The bar: 0 errors, 0 lost, 0 inversions, enter p99 within 2× of the
// baseline, server RSS at most the baseline's + --rss-slack (64) MiB, and
// each attack refused as the defences should (429 before BCrypt and the
// owner let in, idle sockets closed, ≤ --max-streams held, bombs 415 or
// 413, cross-site 403 and the place kept). The database needs the crowd
// plus 3 + --storm-tokens accounts.
package attack
