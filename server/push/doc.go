// Package push serves the push streams of a place in a queue: SSE
// (sse.go, GET .../events, on the connection hijacked from fasthttp) and
// WebSocket (ws.go, GET .../ws). Both send the current status at once,
// then a status event whenever the hub says it changed, keep-alives, and
// a last word when the stream ends (gone, reconnect, replaced); an outage
// of Redis is told as degraded events. The transports share one pump
// (pump.go) that waits on a stream.Sub and writes through the transport's
// writer; a stream holds no buffer and no timer of its own between
// messages (the hub hands out keep-alives, liveness checks and the token's
// expiry as chores). The poll path and the checks before a stream starts
// (the queue token, the stream limit, the client's slot: Options.Open) are
// the caller's.
//
// Concurrency: Streams are safe for concurrent use; each stream runs in
// one goroutine of its own (the hijacked connection's, or the WebSocket
// handler's, which reads the client's control frames at the liveness
// checks: wsPeer), which ends with the stream.
package push
