// Package origin is the gateway's HTTP/1.1 client to one origin (Client,
// New: Config's address and limits), over a pool of idle connections; it
// imports nothing of the waiting room.
//
// What goes to the origin (Prepare, client.go): method, path, query and
// body; never the hop-by-hop headers, the rerouting ones
// (X-HTTP-Method-Override, X-Original-URL ..., Reroutes), Expect, the
// cookies the caller says are its own, a client's pass header
// (Config.PassHeader), nor any header spelled with "_" like one of those.
// X-Forwarded-For, -Proto, -Host and Forwarded are set; Host is kept.
//
// Bodies stream both ways (Forward): a request body as the client sends
// it, up to Config.BodyLimit (ErrTooLarge beyond), an answer as the
// visitor reads it, through a fixed read buffer per connection. The
// origin's answers are read strictly (response.go, RFC 9112): a status
// line or header two parsers could read two ways, Content-Length beside
// Transfer-Encoding, conflicting lengths, bad chunk framing or a 101
// nobody asked for are refused rather than guessed at; 1xx interim
// answers are skipped; Set-Cookie for the caller's cookies is dropped; a
// Location naming the origin itself becomes a path on the gateway.
//
// WebSocket (Tunnel, tunnel.go) is joined byte for byte only after a real
// 101: Upgrade: websocket and the Sec-WebSocket-Accept of this handshake.
// Any other answer is relayed and the connection closed. Tunnels are
// capped per address the caller names and in total, closed idle.
//
// A failure is one of the package's Err values, wrapping the cause; the
// caller answers them. A Client is safe for concurrent use.
package origin
