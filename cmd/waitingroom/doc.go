// Command waitingroom runs the virtual waiting room.
//
//	waitingroom [serve]                         run an instance (config from the environment)
//	waitingroom seed --users N --password P --products M --stock S
//	                                            create demo users and products
//
// The command is the composition root. LoadConfig (config.go) reads the
// environment into each component's own configuration type and the HTTP
// adapters' (server.Config); Main (instance.go) opens the clients — Redis
// in its topology (redis.go), Postgres — derives the connection ceiling
// from the descriptor limit, builds every component and wires the metrics
// into their callbacks (wire.go), hands the HTTP adapters the components
// they call (server.New), starts and stops the components' background
// loops (loop.Start) and shuts down in order: streams, HTTP, the loops,
// then Redis and Postgres. Package server serves HTTP, builds no component
// and starts no loop.
//
// The package's tests are the system scenarios: the instance as Main
// composes it, on loopback ports against real Redis and Postgres, driven
// over HTTP, WebSocket, raw sockets and headless Chromium (harness_test.go);
// some start the test binary as the command itself (TestMain). The other
// packages' tests are unit tests, each package's in seconds.
//
// Concurrency: Main is used from one goroutine (Open, Run or Serve, then
// Close); the components it builds are each safe for concurrent use.
package main
