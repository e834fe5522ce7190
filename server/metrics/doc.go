// Package metrics holds the instance's Prometheus collectors under the
// contract's names (waitingroom_*), on one registry per instance, and the
// observers that feed them from the components' callbacks (an admission
// run, an enter, a controller step, an ETA judgement). The composition
// root builds it, wires the observers into the components and hands it
// to the HTTP adapters, which count requests, streams and refusals on it;
// the management port serves its registry at /metrics.
//
// The room-labelled series are bounded (Options): a room has them only
// while it has had activity here (an admission run that found work, an
// enter) within QuietAfter, and at most MaxRooms rooms have them; the
// totals across rooms (waitingroom_rooms_*) always count every room. A
// room's series removed and made again start their counters from 0,
// which rate() and increase() take as a counter reset.
// docs/operations.md#many-rooms says what it means for queries.
//
// Concurrency: the collectors and observers are safe for concurrent use.
package metrics
