// Package api is what the public and the management apps share at the
// HTTP edge: the contract's error form (Error, Write: one table maps the
// domain packages' sentinel errors to statuses and codes; anything unknown
// is a 500 with a generic message, its detail only in the log), JSON body
// decoding that says what is wrong, the bearer token, the request id
// (X-Request-Id on every response, request_id in the request's log lines),
// and the Fiber configuration both apps run with.
package api
