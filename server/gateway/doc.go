// Package gateway is gateway mode: the waiting room in front of any origin.
// With an origin set, the public port answers every path outside Prefix
// (/_wr) here, below Fiber. Routes (the configured ones, NewStore's
// defaults, and a room's own through the admin API) say which requests need
// a pass and which room queues them, matched on a canonical form of the
// path at least as lenient as the origins behind (routes.go); a path
// origins read differently is 400. A request no route covers is forwarded
// at once, with no Redis call.
//
// A protected request carries a pass or is refused (a page navigation gets
// 303 to the room's waiting page, anything else 403 pass_required).
// passflow.go's opening comment says how a pass is spent — once (the entry
// token consumed, then released or restored) or by session — and how it
// reaches the origin: the Waitingroom-Pass header (package pass). Protected
// requests' latency and failures feed adaptive admission (signals.go).
//
// Forwarding is package origin's HTTP/1.1 client (NewUpstream hands it the
// pass header a client may never send); the gateway keeps the policy
// (upstream.go): the tunnels counted per client address, the request's
// own faults (413, 400, 429, 503) and the origin's failing, slow or
// oversized answers as 502 or 504 in the contract's JSON, the origin's
// health (originhealth.go) and the tunnels' metrics.
//
// The package owns the rooms' gateway settings (Settings, Store: one Redis
// hash under the instance's prefix, "gw:rooms", reloaded every second by
// Store.Run) and its metrics (waitingroom_gateway_*).
//
// Concurrency: a Gateway and a Store are safe for concurrent use; the
// settings in force are an immutable snapshot swapped atomically.
package gateway
