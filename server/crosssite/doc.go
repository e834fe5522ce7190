// Package crosssite is the public API's cross-site gate: the rule that
// refuses, with 403 cross_site and before any work, the requests another
// site could make a browser send with the waiting room's cookies
// (state-changing ones carrying the queue cookie, every one without an
// Authorization header in gateway mode, every WebSocket handshake) unless
// they come from the same origin or an allowed one (Gate.Origins).
// crosssite.go's opening comment states the rule in full.
//
// Concurrency: a Gate is read-only once built; safe for concurrent use.
package crosssite
