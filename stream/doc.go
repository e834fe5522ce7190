// Package stream owns live push: the per-instance hub that turns the
// queue's typed admission and departure events into per-connection status
// updates for SSE and WebSocket streams, and answers polls from memory.
//
// The hub holds one subscription to every room's events and keeps, per
// room, the ticket at or below which nobody waits (serving: the last
// admitted, unless someone was passed over as absent) and the tickets
// above it no longer waiting, so a connection derives its position from
// the ticket in its queue token without a Redis call: t − serving −
// |departed between|, the 1-based ZRANK. Pub/sub is a hint and Redis the truth: a gap in a room's
// event numbers, a resubscription and every ResyncEvery re-read the room.
// Fan-out runs in shards, each with its own lock and worker; every
// connection has a latest-value slot, so a slow client never delays the
// hub or anyone else, and one stalled for StallTimeout is dropped. A poll
// at the front is made exact by one shared read of the room's event number.
//
// Concurrency: a Hub is safe for concurrent use. Run owns the drain, resync
// and shard goroutines and stops them all before it returns; Close tells
// every connection to reconnect elsewhere.
//
// The argument in full (positions, re-reads, openings, bands, streams per
// user, polls at the front): see docs/design.md, "Push: the stream hub".
package stream
