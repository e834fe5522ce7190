// Package protocol is the HTTP protocol's edge below Fiber: the checks
// the server's filter runs on every parsed request of both apps before
// any handler (Check: compressed bodies, ambiguous framing, a second Host
// header, unknown methods), the body handling of gateway mode's streamed
// requests (BufferBody, CloseIfUnread), and their refusals, each encoded
// once in the contract's JSON (Refusal). What must happen before fasthttp
// parses anything is package listener's, on the connection.
//
// Concurrency: the functions and the refusals are safe for concurrent
// use; a Refusal is immutable.
package protocol
