// Package listener owns the public port's connections, below HTTP: what a
// connection may hold before fasthttp and Fiber see a byte of it.
//
//   - the connection ceiling (Config.MaxConns, derived by Ceiling from the
//     open-file limit): a connection past it gets a 503 and is closed;
//   - the per-address cap (Config.PerAddr, derived by PerAddressCap), with
//     its counts per address (AddrKey: IPv4 address, IPv6 /64; Counts);
//   - the first-request deadline (Config.FirstRequest), lifted by MarkServed;
//   - the header-line guard (GuardHeaderLines, headerguard.go), on both
//     ports: a last header line without a colon fails at once;
//   - the sweep of connections that never sent a byte, at shutdown
//     (Public.CloseUnused), on both ports: the management port is a Public
//     without caps;
//   - the refusal bytes, written to the socket before any request: the
//     contract's JSON ({"error":"unavailable",…}) in a 503 with Retry-After.
//
// It knows nothing of HTTP handlers, metrics or the access lists: the
// server passes callbacks in Config for the metrics (Refused, IdleClosed),
// the exemptions from the per-address cap (Exempt: trusted proxies, the
// allow list) and a logger. The handler-level parts of the protocol edge
// (the filter that refuses compressed bodies, ambiguous framing and unknown
// methods; the fasthttp step that calls MarkServed) stay in server: they
// work on parsed requests, write through Fiber and register a metric, while
// this package works on bytes and sockets and is tested with plain ones.
//
// Concurrency: a Public is safe for concurrent use (fasthttp accepts on
// one goroutine and serves each connection on its own); counts are atomic
// or under a mutex, MarkServed and Close may race with the first-request
// timer. A headerGuardConn is read by one goroutine at a time.
package listener
