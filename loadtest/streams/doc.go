// Package streams is the streams scenario: push at scale. It freezes
// admission (targetActive 0), makes -n (10,000) users user<--first-user>…
// enter — with --mint-tokens their access tokens are minted from the
// server's secret (--jwt-secret or $WR_JWT_SECRET) instead of N BCrypt
// logins, which assumes a freshly seeded database where userK has id K —
// and opens one stream per user, --conns (64) at a time, by --transport
// sse or ws. Then it sets targetActive to --target (20) for --duration
// (60s): every stream that gets READY closes and orders one unit of
// --product, which frees the slot.
//
// Fan-out lag is the receive time − the event's "ts" (the admission's
// publish time) for every status event after the on-connect one, by
// position band. A stream silent for --idle (45s; heartbeats count) or
// closed without gone counts as dropped. /metrics is read before the
// streams open, with them open and at the end: RSS per stream and the
// server's CPU. The report sets the figures next to the contract's bars
// (10,000 streams: lag p99 ≤ 250 ms, ≤ 30 KiB RSS per stream). At the end
// the streams close, the users who did not order leave, and targetActive
// is restored.
package streams
