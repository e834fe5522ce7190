// Package server is the public HTTP face of the waiting room: the API and
// the page on WR_HTTP_ADDR, served by Fiber. It adapts HTTP to the use cases
// and back — each handler decodes, checks the token, calls one package and
// maps its answer — over the components the composition root
// (cmd/waitingroom) built and handed to New (Deps); Config holds the HTTP
// settings alone. It serves the management app (package admin) on
// WR_ADMIN_ADDR.
//
// The routes, as the contract's table lists them:
//
//	POST /api/v1/auth/login          login.go      → package login (BCrypt, login limits)
//	POST /api/v1/rooms/{r}/enter     queueapi.go   → queue.Enter, a queue token
//	GET  /api/v1/rooms/{r}/position  queueapi.go   → the hub's memory, or queue.Status
//	POST /api/v1/rooms/{r}/leave     queueapi.go   → queue.Leave
//	GET  /api/v1/rooms/{r}/events    stream.go     → SSE over a stream.Hub subscription
//	GET  /api/v1/rooms/{r}/ws        stream.go     → WebSocket, the same
//	POST /api/v1/orders              orders.go     → package checkout
//	GET  /api/v1/products/{id}       orders.go     → package checkout
//	GET  /, /rooms/{r}, /static/*    publicapp.go  → the embedded page (package web)
//	GET  /api/v1/rooms/{r}/challenge gatewaymode.go → package pow (gateway mode)
//	GET  /.well-known/jwks.json      gatewaymode.go → package pass (gateway mode)
//
// In gateway mode (WR_UPSTREAM; gatewaymode.go) all of the above lives
// under /_wr, and every other path is the origin's: the protocol filter
// hands it to package gateway below Fiber. Enter then also takes anonymous
// visitors (a signed identity in the wr_visitor cookie) and, in a room
// that asks for it, a solved proof of work; a READY answer sets the entry
// cookie the gateway spends.
//
// Around the handlers, in the order a request meets them: the public
// listener (package listener: the connection ceiling, the per-address cap,
// the first-request deadline), the protocol filter (protocolfilter.go:
// compressed bodies, ambiguous framing, unknown methods), the access lists'
// deny check (access.go), the cross-site gate and the cookie (origin.go),
// and layer 1's limits (ratelimits.go, over package ratelimit; login's own
// are package login's). Errors are returned by handlers and written by
// package api in the contract's form; tokenrefusal.go records refused
// tokens as security events (package seclog). Once a request is answered,
// whatever answered it, the protocol filter hands it to the access log
// (accesslog.go, over package accesslog).
//
// What is not HTTP lives elsewhere, each concept in a package that owns its
// data, its Redis keys and its loop: queue (rooms, the admission loop),
// queue/adaptive, queue/presence, stream (the push hub), and under server:
// access, faults, checkout, login, token, ratelimit, pgstore, listener,
// gateway, pass, pow, admin (the management app), api (the error form and
// request decoding both apps share), seclog (the security log), accesslog
// (the access log). None of them imports server.
//
// Concurrency: a Server is safe for concurrent use by Fiber's handlers. Serve
// owns its goroutines (the two listeners) and stops them before it returns.
// The components' background loops are not the server's: the composition
// root builds and starts them with loop.Start before Serve and stops them
// after it, then closes Redis and Postgres.
//
// Imports: queue and its sub-packages, stream, web and server's own
// sub-packages; never cmd.
package server
