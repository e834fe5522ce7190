// Command loadtest is the waiting room's load tool. It drives a running
// instance over HTTP, measures what the contract's performance bars talk
// about and prints a report; --out also saves it as JSON, --html as one
// self-contained page.
//
//	go run ./loadtest <scenario> [flags]    (<scenario> -h lists its flags)
//
// Scenarios, each a package of its own whose comment says what it does:
//
//   - seed: the seed system's own k6 test, repeated
//   - poll: poll-path throughput against a plain Fiber handler, login cost
//   - streams: N users each holding an SSE or WebSocket stream
//   - surge: a crowd at opening time: FIFO, ETA accuracy, lost users
//   - attack: the surge alone, then beside attacks from other addresses
//   - gateway-attack (package gatewayattack): the same for gateway mode
//   - ceiling: one room on one Redis shard, no server
//   - rooms: what idle rooms cost, and a busy room's READY beside them
//   - crowd: a steady crowd of simulated shoppers for a demo
//   - reset-room (package resetroom): a room back to the demo's settings
//
// What they share is under internal/: client (the API and admin API),
// stream (SSE and WebSocket), measure, report and the rest. Every loop is
// bounded by count and by time; Ctrl-C ends a run early and the report of
// what was measured is still printed (a second Ctrl-C kills the process).
// The tool shares the machine with the server: compare ratios within one
// run, not absolute rates across machines. The server needs demo data
// (waitingroom seed --users 10000 --password demo-pass --products 1
// --stock 100000000); usage and how to run the server for each scenario:
// docs/operations.md, "Load test".
package main
