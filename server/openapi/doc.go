// Package openapi holds the OpenAPI 3.1 descriptions of the two ports:
// Public (the public API, served at GET /api/v1/openapi.json) and Admin
// (the management port, served at GET /admin/openapi.json). They are
// maintained by hand beside the handlers they describe; the system test
// (cmd/waitingroom/openapi_test.go) drives every route of a running server,
// validates each answer against them, and fails when a route and the
// description disagree.
//
// Public's paths start at the public port's root; in gateway mode the
// server serves it with its server URL under /_wr (operations marked
// "x-gateway-mode": "only" exist in gateway mode alone).
//
// Concurrency: the descriptions are read-only; PublicAt returns a new
// copy when it changes the server URL.
package openapi
