// Package compose is the composition root of the waiting room: what
// cmd/waitingroom runs and what the system tests (package systemtest)
// start in their own processes.
//
// LoadConfig (config.go) reads the environment into each component's own
// configuration type and the HTTP adapters' (server.Config); Main
// (instance.go) opens the clients — Redis in its topology (redis.go),
// Postgres — derives the connection ceiling from the descriptor limit,
// builds every component and wires the metrics into their callbacks
// (wire.go), hands the HTTP adapters the components they call
// (server.New), starts and stops the components' background loops
// (loop.Start) and shuts down in order: streams, HTTP, the loops, then
// Redis and Postgres. Package server serves HTTP, builds no component and
// starts no loop.
//
// Concurrency: Main is used from one goroutine (Open, Run or Serve, then
// Close); the components it builds are each safe for concurrent use.
package compose
