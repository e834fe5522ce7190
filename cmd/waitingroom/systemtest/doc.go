// Package systemtest is the harness of the system scenarios, for tests
// only: the instance as compose.Main composes it, on loopback ports
// against real Redis and Postgres (Env, Instance), driven over HTTP,
// WebSocket, raw sockets and SSE; origins, nginx and Caddy in front,
// Redis processes of a test's own, servers as processes of their own
// (StartChild), and the OpenAPI checker the answers are held to.
//
// The scenarios are the tests of its packages, one per subject: browser
// (headless Chromium), gateway, flow, operator, hostile and resilience.
// go test runs them side by side; each package's TestMain is Run, and the
// heavy kinds of test (browsers, child servers) share slots across the
// test binaries (HoldSlot).
package systemtest
