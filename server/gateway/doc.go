// Package gateway is gateway mode: the waiting room in front of any origin.
// With WR_UPSTREAM set, the public port answers every path outside Prefix
// (/_wr) here, below Fiber:
//
//   - Routes (WR_PROTECT, and a room's own through the admin API) say
//     which requests need a pass and which room queues them, matched on a
//     canonical form of the path at least as lenient as the origins behind
//     (routes.go); a path origins read differently is 400. A request no
//     route covers is forwarded at once, with no Redis call.
//   - A protected request carries a pass or is refused: a page navigation
//     gets 303 to the room's waiting page (which brings the visitor back to
//     the same URL once admitted), anything else 403 pass_required with the
//     room and the page's URL.
//   - Pass mode "once" (the default): the entry token, from the entry cookie
//     the waiting room's API sets at READY or from X-Entry-Token, is consumed
//     atomically before the request is forwarded; the slot is released when
//     the origin answers anything but a 5xx, and the token restored when it
//     fails or times out, at most MaxRestores times and within its entry
//     window, so the visitor can retry (with the same pass id). Mode
//     "session": the first protected request opens a session (a signed
//     cookie; its id recorded in Redis with the slot) that holds its slot
//     toward targetActive for sessionTtl after each protected request, up
//     to sessionMaxTtl, paced by the room's session limits (queue.Hold);
//     leave and a new admission end it.
//   - Every protected request forwarded carries the Waitingroom-Pass header,
//     an Ed25519-signed JWT (package pass) the origin can verify with the
//     keys at /_wr/.well-known/jwks.json (package pass/passcheck for Go).
//   - Protected requests' latency and failures (5xx, timeouts) feed the
//     adaptive controller's signals, one visitor at a time (signals.go):
//     admission follows the origin.
//   - The origin failing, slow or oversized is 502 bad_gateway or 504
//     gateway_timeout in the contract's JSON.
//
// Forwarding (Upstream, an HTTP/1.1 client of the package's own):
// method, path (as the public port's server normalized it, not the
// canonical form routes are matched on), query and body go to the origin;
// hop-by-hop and rerouting headers (X-HTTP-Method-Override,
// X-Original-URL ...), the waiting room's cookies, any client-sent pass
// header, and any header spelled with "_" like one of those or of the
// gateway's own do not. X-Forwarded-For (a trusted proxy's chain plus the
// peer), X-Forwarded-Proto, X-Forwarded-Host and Forwarded are set; Host
// is kept. Bodies stream both ways: a request body as the client sends it
// (up to WR_UPSTREAM_BODY_LIMIT, 413 beyond), an answer as the visitor
// reads it, whatever its framing, through a fixed read buffer per
// connection (a slow reader holds the origin back). The origin's answers
// are read strictly (response.go): conflicting lengths, a bare CR, a 101
// nobody asked for are 502; 1xx interim answers are skipped; Set-Cookie
// for the waiting room's cookies is dropped. WR_UPSTREAM_TIMEOUT bounds
// the wait for the headers and each silence in the body. An origin that
// fails before its headers is 502 or 504; one that fails while its body
// streams has its connection to the visitor closed (the status was
// already sent).
//
// WebSocket (tunnel.go): the visitor's connection is joined to the
// origin's byte for byte only after a real switch (101 with the matching
// Sec-WebSocket-Accept); any other answer is relayed and the connection
// closed. Tunnels are capped per client address and in total, and closed
// when idle both ways.
//
// The package owns the rooms' gateway settings (Settings, Store: one Redis
// hash under the instance's prefix, "gw:rooms", reloaded every second by
// Store.Run) and its metrics (waitingroom_gateway_*).
//
// Concurrency: a Gateway and a Store are safe for concurrent use; the
// settings in force are an immutable snapshot swapped atomically.
//
// Imports: queue, queue/loop, server/listener (address keys and counts),
// server/pass, server/token; never server.
package gateway
