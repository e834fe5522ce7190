// Package gateway is gateway mode: the waiting room in front of any origin.
// With WR_UPSTREAM set, the public port answers every path outside Prefix
// (/_wr) here, below Fiber:
//
//   - Routes (WR_PROTECT, and a room's own through the admin API) say
//     which requests need a pass and which room queues them. A request no
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
// Forwarding (Upstream): method, path (normalized, as matched), query and
// body go to the origin; hop-by-hop headers, the waiting room's cookies and
// any client-sent pass header do not. X-Forwarded-For (a trusted proxy's
// chain plus the peer), X-Forwarded-Proto, X-Forwarded-Host and Forwarded
// are set; Host is kept. Request bodies are read whole first, up to
// WR_UPSTREAM_BODY_LIMIT (413 beyond); responses are streamed to the
// visitor as the origin sends them, whatever their size (a download is
// not held in memory), after headers of at most 64 KiB (502 beyond). An
// origin that fails before its headers is 502 or 504; one that fails
// while its body streams has its connection to the visitor closed (the
// status was already sent). WebSocket upgrades and other protocol
// switches are not passed through (the origin answers them as ordinary
// requests).
//
// The package owns the rooms' gateway settings (Settings, Store: one Redis
// hash under the instance's prefix, "gw:rooms", reloaded every second by
// Store.Run) and its metrics (waitingroom_gateway_*).
//
// Concurrency: a Gateway and a Store are safe for concurrent use; the
// settings in force are an immutable snapshot swapped atomically.
//
// Imports: queue, queue/loop, server/pass, server/token; never server.
package gateway
