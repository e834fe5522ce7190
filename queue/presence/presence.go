// Package presence marks the waiting users seen on this instance present
// in Redis, in batches — one pipeline per room every few seconds, not a
// Redis write per poll — so that the admission run can remove those who
// abandoned the queue (WR_IDLE_TIMEOUT, queue.Options.IdleTimeout).
//
// A user is seen when they poll (Seen, from the HTTP layer) or hold a
// stream on this instance (asked of the Streams at flush time). Run
// flushes every idle/6, at most every 10 s, until its context is done.
//
// Concurrency: Seen is safe for concurrent use and takes one of 16 shard
// locks; Run is the only flusher.
//
// Imports: queue and queue/loop only.
package presence

import (
	"context"
	"hash/maphash"
	"sync"
	"time"

	"waitingroom/queue"
	"waitingroom/queue/loop"
)

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
}

type shard struct {
	mu    sync.Mutex
	rooms map[string]map[string]struct{}
}

// New returns a Presence that marks users present in q; idle is the idle
// timeout (0: nobody is ever removed, and Run returns at once).
func New(q *queue.Queue, streams Streams, idle time.Duration) *Presence {
	return &Presence{q: q, streams: streams, idle: idle, seed: maphash.MakeSeed()}
}

// Idle is how long a waiting user may go unseen before losing the place
// (WR_IDLE_TIMEOUT; 0: never): the idle refusal names it.
func (p *Presence) Idle() time.Duration { return p.idle }

// Seen records that user polled room.
func (p *Presence) Seen(room, user string) {
	sh := &p.shards[maphash.String(p.seed, user)%uint64(len(p.shards))]
	sh.mu.Lock()
	if sh.rooms == nil {
		sh.rooms = map[string]map[string]struct{}{}
	}
	m := sh.rooms[room]
	if m == nil {
		m = map[string]struct{}{}
		sh.rooms[room] = m
	}
	m[user] = struct{}{}
	sh.mu.Unlock()
}

// take returns and forgets everyone seen since the last take, by room.
func (p *Presence) take() map[string][]string {
	out := map[string][]string{}
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		rooms := sh.rooms
		sh.rooms = nil
		sh.mu.Unlock()
		for room, users := range rooms {
			for u := range users {
				out[room] = append(out[room], u)
			}
		}
	}
	return out
}

// Run flushes every idle/6 (at most every 10 s) until ctx is done.
func (p *Presence) Run(ctx context.Context) {
	if p.idle <= 0 {
		return
	}
	loop.Every(ctx, min(p.idle/6, 10*time.Second), p.flush)
}

// flush marks everyone seen since the last flush present in Redis:
// pollers, and the users of the streams open on this instance.
func (p *Presence) flush(ctx context.Context) {
	seen := p.take()
	for _, room := range p.streams.Rooms() {
		seen[room] = append(seen[room], p.streams.Users(room)...)
	}
	for room, users := range seen {
		tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_ = p.q.Touch(tctx, room, users) // Redis down: nobody is removed meanwhile either
		cancel()
	}
}
