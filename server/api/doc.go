// Package api is what the public and the management apps share at the
// HTTP edge: the contract's error form (Error; a Table maps other packages'
// errors to it and writes every error, anything unknown a 500 with a
// generic message, its detail only in the log), JSON body decoding that
// says what is wrong, the bearer token, the request id (X-Request-Id on
// every response, request_id in the request's log lines), and the Fiber
// configuration both apps run with.
//
// It imports nothing of the module: the table's rows, the domain packages'
// sentinel errors, are package server's (errors.go), built once where
// every domain package is visible and handed to each app.
package api
