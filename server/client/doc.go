// Package client tells what a request says of its client, believing only
// the trusted proxies (Resolver.TrustedProxies): the client's address and
// the key per-address limits count it by, whether the request came over
// HTTPS, and the request id a trusted proxy passed on. The public app's
// handlers, the gateway's identity and the management app's throttle all
// ask it, so that they agree on who a client is.
//
// Concurrency: a Resolver is a value, read-only once built; safe for
// concurrent use.
package client
