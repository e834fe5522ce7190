// Package fuzzroutes is the fuzz-routes scenario: differential fuzzing of
// the waiting room's judge of protected routes (server/gateway, Table)
// against real routers. It owns the origins under origins/ (Express,
// Fastify, Go's ServeMux, Flask, Django, Sinatra, PHP), the stack that runs
// each behind three front doors (the waiting room as gateway, nginx and
// Caddy asking it in forward auth, from deploy/forward-auth), the cases
// (mutations of the protected routes, generated from a seed) and the
// property: no protected handler runs for a request without a pass.
//
// Every process the stack starts is stopped by Stack.Close, also when the
// start fails half-way; a campaign's workers are stopped and waited for
// before Campaign returns. docs/fuzz-routes.md says how to run it and
// what each router reads.
package fuzzroutes
