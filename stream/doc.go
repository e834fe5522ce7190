// Package stream owns live push: the per-instance hub that turns the
// queue's admission and departure events into per-connection status
// updates for SSE and WebSocket streams, and answers polls from memory.
//
// # One subscription per instance
//
// The hub holds ONE subscription to every room's events (Source.Events: a
// Redis pattern subscription that yields the queue's typed queue.Event; the
// wire format belongs to the queue, which publishes it). One goroutine
// drains it: it applies each event to that room's in-memory state and
// marks the room dirty in every shard. It never blocks on a connection.
// Pub/sub is at-most-once, so it is a hint: Redis is the truth. After the
// subscription is re-established (a Subscribed notice), after a gap in a
// room's event numbers, and every ResyncEvery anyway, the hub re-reads the
// state of its rooms from Redis with one atomic script per room, all rooms
// in one pipeline.
//
// # Positions without a Redis call per connection
//
// Tickets come from a Redis INCR and every ticket is added to the queue, so
// the tickets still waiting are exactly those above the last admitted ticket
// ("serving") whose users have not left. The admission script publishes
// serving on every tick; the leave script publishes the departed ticket and
// keeps it in the room's gone set until serving passes it. A room's state is
//
//	serving  the last admitted ticket
//	gone     departed tickets above serving, ascending
//	waiting  queue length; rate, target for the ETA
//	ev       the room's event sequence number
//
// and a connection whose queue token carries ticket t derives
//
//	position(t) = t − serving − |{g ∈ gone : serving < g < t}|
//
// which equals the 1-based ZRANK of its user. When t ≤ serving (admitted)
// or t ∈ gone (left), the connection's new status is read from Redis, in one
// pipeline per room and batch: that happens once per user, on admission.
//
// Applying an event: if ev = state.ev + 1, serving and waiting are taken
// from it, left tickets are added to gone, and gone entries ≤ serving are
// dropped. Otherwise (a gap, or no state yet) the event is applied the same
// way but the room is marked stale and re-read at once. A snapshot read
// from Redis replaces the state unless the state has already applied a
// newer event.
//
// States are immutable and shared, so an event makes a new one; gone is
// kept as two sorted lists, a base and the few departures since, so that
// dropping entries ≤ serving only reslices and a departure copies the
// short list, merged into a new base once it outgrows √|gone|: O(√n) per
// departure amortized instead of copying the whole of gone per event.
//
// # Re-reads without the departed list
//
// gone can be long (150,000 departed tickets above serving in a room of a
// million), and sending it costs Redis O(n) per read: tens of ms per room,
// every ResyncEvery, on every instance. So each read is told what the
// state already holds (queue.GoneHeld): its ev, serving and |gone|, unless
// it is stale or missing (then it holds nothing). The snapshot script
// leaves gone out when the room's ev and serving are those and the room
// counts as many departed tickets above serving (ZCOUNT, O(log n)), and the
// new state keeps the held list. This is sound because every script that
// changes the departed tickets above serving (a departure, a grant, an idle
// drop, an admission that moves serving) bumps ev in the same atomic call
// and publishes what changed, and a state that is not stale was derived
// from a confirmed snapshot and then every event after it in order: at the
// same ev, its gone is Redis's. serving and the count are checked as
// well, cheaply, in case ev does not witness a change (a Redis that lost
// writes and counted ev up again): any difference and the list is sent.
// A missed event is thus corrected by the next read (ev differs), as
// before. The held list is that of the state the read was asked with,
// captured before the read; an event applied while the read runs has a
// greater ev than a snapshot that left the list out (its ev is the held
// one), so that newer state is kept and the snapshot dropped, as above.
//
// A snapshot whose ev is below the one the state had before the read
// cannot be older news: ev only grows, so Redis lost its data (a restart
// without persistence, a failover to a replica behind) and its numbers
// start over. Then the snapshot replaces the state whatever its ev, and
// the room is read again at once for what was applied meanwhile;
// otherwise the state would be kept as "newer" until the new numbers
// passed the old ones, with positions derived from a room that is gone.
//
// # Pre-queue and openings
//
// Users who arrive before a room's scheduled opening wait in a pre-queue
// without a ticket (their queue token carries seq 0, so polls never answer
// them from memory). At the opening one script gives them fresh tickets
// above every earlier one, in the shuffled or arrival order, and publishes
// ONE event of kind "open" with the room's new schedule number (sched). The
// tickets stay contiguous, so the formula above holds unchanged; the event
// is applied like any other (a gap in ev still means a re-read). A stream
// in the PREQUEUE state re-reads its status from Redis once the room's
// sched passes the one it last read, and from then on follows its new
// ticket. Method and opening-time changes publish an event of kind
// "config" (new sched, and closed when the method is reject): waiting
// streams then show CLOSED from memory, pre-queue streams re-read.
//
// # What the operator tells waiting users
//
// Pausing or resuming a room and setting or clearing the operator's
// message publish a "config" event too, carrying paused and message (a
// snapshot carries them as well). Waiting streams get a fresh status from
// memory at once, whatever their band (the pause and message last
// delivered are kept per connection); pre-queue streams re-read, as for
// any config event. A user the admission run dropped as idle reads as
// queue.ErrIdle: the stream ends with a gone update marked Idle.
//
// # Fan-out
//
// Connections are spread over shards by a hash of the connection, each with
// its own lock and worker goroutine, so fan-out runs in parallel and no lock
// is shared by all connections. A worker evaluates the connections of each
// dirty room, and every SweepEvery all of its connections (coalesced
// updates that are now due, READY windows that ended, stalled writers).
//
// Band coalescing: a connection at positions 1–100 gets every change;
// 101–1000 at most one per second; beyond, one per 5 s (Options.Coalesce).
// READY is delivered as soon as it is read. A band push that falls due
// between events waits for the next event while events keep coming (the
// room changed within SweepEvery), and goes out with it: fresh news, not
// news up to an event interval old; a quiet room's sweep sends it. After
// a push that many connections had at once (their initial status, a
// status read, the operator's news) a connection's next band push waits
// a further random share of its band's interval, so the bands' pushes
// spread over the interval instead of coming all in one event.
//
// Chores: a stream holds no timer. Its writer asks (Sub.Schedule) for a
// keep-alive at least every so often, a liveness check, and an expiry
// (its token's); the shard's sweep hands them out (Sub.Chores, signalled
// through Notify like an update), one pass for all of its connections.
//
// Each connection has a latest-value slot: a new update overwrites one not
// yet written, so a slow client costs one slot, never a queue, and never
// delays the hub or other clients. A connection whose slot stays unwritten
// for StallTimeout is dropped (its writer is stuck on a dead or slow peer)
// and counted.
//
// # Streams per user
//
// With Options.MaxPerUser set, a user holds at most that many subscriptions
// in one room on this hub (SSE and WebSocket alike: the hub does not know
// the transport). The newest wins: the shard that holds the user (chosen
// by a hash of the user, so all of one user's subscriptions share it)
// registers the new one and, in the same critical section, unregisters the
// oldest beyond the cap; that one ends with a Replaced update as its last
// word (finish: no later update can overwrite it). A reload or a new device
// therefore never locks its owner out, and hoarding streams under one
// account holds no more than the cap. The count is per instance.
//
// # Polls
//
// Position answers GET position from the same state when it is fresh (not
// stale and confirmed by a snapshot within 3 × ResyncEvery, or Redis is
// unreachable, so nothing can have been admitted meanwhile); otherwise the
// caller asks Redis, which stays the judge. Its answer may trail Redis by
// one pub/sub hop, which is harmless behind the front: those users are not
// the next to be admitted.
//
// # Polls at the front: exact without a status read
//
// At the front (positions 1–100, or within targetActive: the next to be
// admitted) a poll must see READY as soon as the admission happened, on
// any instance, and the pub/sub hop is not soon enough: a client told
// "admitted" (or a poll that follows an admission on another instance)
// must not be answered from a state that has not yet applied it.
// PositionNow makes the memory answer exact at the moment of the poll
// without a status script per poll:
//
//   - Every change that moves a waiting user — admission, departure, idle
//     drop, opening, change of method, pause or message — increments the
//     room's event number ev in the script that publishes it, atomically.
//   - A poll at the front waits for one read of the room's ev (a plain
//     HGET, Source.EventNumbers) that STARTS after the poll arrived. If the
//     hub's state is gap-free (not stale) and has applied events up to that
//     number, the state holds every change completed before the poll, and
//     the answer from memory is what the status script would have said
//     then. Otherwise (the event is still on its way, or was lost) the
//     poll asks Redis.
//   - The reads are shared (confirmer): a poll that finds fewer than two
//     reads in flight on the instance reads at once, itself (no goroutine
//     hand-off); polls that arrive while two are in flight gather, and
//     when one ends, one of them reads for all of them — every room they
//     ask about in one pipeline. So the busier the instance, the fewer
//     round trips per poll: at most one (2.5 polls per read measured under
//     a closed loop); none for polls behind the front.
//
// What this keeps: READY is seen by the first poll after the admission
// script returned, on any instance (the ticket is at or below serving, or
// the state has not caught up: both go to Redis, which answers READY with
// the token — never 404); positions equal ZRANK + 1 because the state has
// applied every departure before the read; a pause or message shows at
// once. What it costs: a front poll waits for one event-number round
// trip, or under load for up to two (the end of one in flight, then its
// batch's), and Redis serves one HGET per batch instead of one status
// script per poll. While Redis is
// unreachable the front is not answered from memory (the caller's status
// read fails as before); behind the front the last state still answers.
//
// Other designs weighed: answering the front from memory unconfirmed (one
// pub/sub hop late, and a poll that follows an admission on another
// instance could say WAITING to a user already admitted); batching the
// status scripts of concurrent polls into one pipeline (still a script per
// poll in Redis, and its reply per user); the status read kept only for
// tickets the hub says were admitted (the same hop, the other way round).
// # Concurrency
//
// A Hub is safe for concurrent use. Run owns the drain, resync and shard
// goroutines and stops them all before it returns; Close tells every
// connection to reconnect elsewhere.
//
// # Imports
//
// The standard library, queue (its Status, RoomSnapshot, GoneHeld and
// Event types; the hub reaches Redis only through Source, which
// *queue.Queue implements) and queue/loop; never server. (stream/sse is
// the client side of an event stream, used by tests and the load tool; the
// hub does not import it.)
package stream
