// Package server is the waiting room's HTTP face: the public API and page
// on Config.HTTPAddr and the management app (package admin) on AdminAddr,
// served by Fiber over the components the composition root (cmd/waitingroom)
// built and handed to New (Deps); Config holds the HTTP settings. Each
// handler decodes, checks the token, calls one component, maps its answer:
//
//	POST /api/v1/auth/login            login.go       → package login
//	GET  /api/v1/rooms/{r}             package roominfo
//	POST /api/v1/rooms/{r}/enter       queueapi.go    → queue (anonymous: visitorenter.go)
//	GET  /api/v1/rooms/{r}/position    queueapi.go    → the hub's memory, or queue.Status
//	POST /api/v1/rooms/{r}/leave       queueapi.go    → queue.Leave
//	GET  /api/v1/rooms/{r}/events, ws  streams.go     → package push (SSE, WebSocket)
//	*    /api/v1/orders, products/{id} orders.go      → package checkout
//	GET  /, /rooms/{r}, /static/*      publicapp.go   → the embedded page (package web)
//	GET  …/challenge, jwks.json        gatewaymode.go → packages pow, pass (gateway mode)
//
// In gateway mode (Deps.Gateway) all of it lives under /_wr and every other
// path is the origin's, handed to package gateway below Fiber (the
// dispatch by mode, gatewaymode.go). Around the handlers, in the order a
// request meets them: package listener (the connections), the protocol
// filter (protocolfilter.go, package protocol), the deny list (access.go),
// the cross-site gate (package crosssite) and layer 1's limits (package
// ratelimit/httplimit). Package api writes the
// errors; apigate.go records refused tokens as security events and
// accesslog.go every answer's access line.
//
// Concurrency: a Server is safe for concurrent use by Fiber's handlers.
// Serve owns its goroutines (the two listeners) and stops them before it
// returns; the components' background loops are the composition root's.
package server
