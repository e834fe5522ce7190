// Package presence marks the waiting users seen on this instance present
// in Redis, in batches — one pipeline per room a second, not a Redis write
// per poll — so that the admission run passes over those who stopped
// coming (presence-aware admission, queue.Options.Grace) and removes those
// who abandoned the queue (queue.Options.IdleTimeout).
//
// A user is seen when they poll (Seen, from the HTTP layer, with the
// pollAfter the poll was answered) or hold a stream on this instance
// (asked of the Streams). Each is written as expected back by now + a
// grace: Intervals poll intervals plus one Tick for a poller, StreamGrace
// for a stream holder. Run writes the pollers every Tick and the stream
// holders every StreamEvery, until its context is done.
//
// Concurrency: Seen is safe for concurrent use and takes one of 16 shard
// locks; Run is the only flusher.
//
// Imports: queue and internal/loop only.
package presence

import (
	"context"
	"hash/maphash"
	"sync"
	"time"

	"waitingroom/internal/loop"
	"waitingroom/queue"
)

const (
	// Intervals is how many poll intervals a poller may miss before the
	// admission run passes them over: a poll late by a slow network or
	// one lost is not an absence.
	Intervals = 3
	// Tick is how often the pollers seen are written to Redis.
	Tick = time.Second
	// StreamEvery is how often the users holding a stream on this instance
	// are written; StreamGrace how long each write counts them present
	// (three writes, so a stream holder is never passed over).
	StreamEvery = 5 * time.Second
	StreamGrace = 3*StreamEvery + Tick
)

// Grace is how long a poller answered pollAfter counts as present after
// the poll: Intervals intervals, plus the Tick their poll may wait before
// it is written.
func Grace(pollAfter time.Duration) time.Duration { return Intervals*pollAfter + Tick }

// Streams are the users holding a stream on this instance, by room.
type Streams interface {
	Rooms() []string
	Users(room string) []string
}

// Presence collects the users seen since the last flush.
type Presence struct {
	q       *queue.Queue
	streams Streams
	idle    time.Duration
	seed    maphash.Seed
	shards  [16]shard
	ticks   int // flushes so far (Run's goroutine only)
}

type shard struct {
	mu    sync.Mutex
	rooms map[string]map[string]time.Duration // user -> longest grace told
}

// New returns a Presence that marks users present in q; idle is the idle
// timeout (0: nobody is ever removed nor passed over, and Run returns at
// once).
func New(q *queue.Queue, streams Streams, idle time.Duration) *Presence {
	return &Presence{q: q, streams: streams, idle: idle, seed: maphash.MakeSeed()}
}

// Idle is how long a waiting user may go unseen before losing the place
// (New's idle, queue.Options.IdleTimeout; 0: never): the idle refusal
// names it.
func (p *Presence) Idle() time.Duration { return p.idle }

// Seen records that user polled room and was told to poll again after
// pollAfter.
func (p *Presence) Seen(room, user string, pollAfter time.Duration) {
	g := Grace(pollAfter)
	sh := &p.shards[maphash.String(p.seed, user)%uint64(len(p.shards))]
	sh.mu.Lock()
	if sh.rooms == nil {
		sh.rooms = map[string]map[string]time.Duration{}
	}
	m := sh.rooms[room]
	if m == nil {
		m = map[string]time.Duration{}
		sh.rooms[room] = m
	}
	m[user] = max(m[user], g)
	sh.mu.Unlock()
}

// take returns and forgets everyone seen since the last take, by room and
// grace.
func (p *Presence) take() map[string]map[time.Duration][]string {
	out := map[string]map[time.Duration][]string{}
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		rooms := sh.rooms
		sh.rooms = nil
		sh.mu.Unlock()
		for room, users := range rooms {
			byGrace := out[room]
			if byGrace == nil {
				byGrace = map[time.Duration][]string{}
				out[room] = byGrace
			}
			for u, g := range users {
				byGrace[g] = append(byGrace[g], u)
			}
		}
	}
	return out
}

// Run flushes every Tick until ctx is done.
func (p *Presence) Run(ctx context.Context) {
	if p.idle <= 0 {
		return
	}
	loop.Every(ctx, Tick, p.flush)
}

// flush writes the pollers seen since the last flush and, every
// StreamEvery, the users of the streams open on this instance.
func (p *Presence) flush(ctx context.Context) {
	seen := p.take()
	if p.ticks%int(StreamEvery/Tick) == 0 {
		for _, room := range p.streams.Rooms() {
			if seen[room] == nil {
				seen[room] = map[time.Duration][]string{}
			}
			seen[room][StreamGrace] = append(seen[room][StreamGrace], p.streams.Users(room)...)
		}
	}
	p.ticks++
	for room, byGrace := range seen {
		for g, users := range byGrace {
			tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_ = p.q.Touch(tctx, room, users, g) // Redis down: no admission runs meanwhile either
			cancel()
		}
	}
}
