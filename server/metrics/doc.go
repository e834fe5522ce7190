// Package metrics holds the instance's Prometheus collectors under the
// contract's names (waitingroom_*), on one registry per instance, and the
// observers that feed them from the components' callbacks (an admission
// run, a controller step). The composition root builds it, wires the
// observers into the components and hands it to the HTTP adapters, which
// count requests, streams and refusals on it; the management port serves
// its registry at /metrics.
//
// Concurrency: the collectors and observers are safe for concurrent use.
package metrics
