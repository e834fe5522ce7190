package stream

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// confirmer batches the reads of rooms' event numbers that exact polls
// wait for (PositionNow). Every caller waits for a read that STARTS after
// it arrived, so the number it gets bounds every event published before
// its request; one read — one pipeline for every room asked meanwhile —
// answers all the callers that arrived before it started.
//
// There is no reader goroutine: a caller that finds fewer than maxReads
// reads in flight makes a read itself, at once. Callers that arrive while
// maxReads are in flight gather in the next batch; when a read ends, one
// of them (the one that takes the batch's lead token) makes the next read
// for all of them. So a lone poll, or two at once, costs one round trip
// and no wait, and the busier the instance, the more polls share a round
// trip.
type confirmer struct {
	read func(ctx context.Context, rooms []string) ([]int64, error)

	mu       sync.Mutex
	inFlight int    // reads in flight, counting one handed on to next
	next     *batch // callers waiting for a read slot
}

// maxReads bounds the reads in flight per instance: enough that a few
// polls at once do not wait for each other's round trip, few enough that
// a busy instance batches.
const maxReads = 2

// batch is the callers of one read.
type batch struct {
	rounds map[string]*round // by room; fixed once the batch is taken
	lead   chan struct{}     // capacity 1: the token that makes its holder read
}

// round is one room's share of one read.
type round struct {
	done    chan struct{} // closed once ev or err is set
	ev      int64
	err     error
	callers int // how many callers wait for it (under confirmer.mu)
}

func newConfirmer(read func(ctx context.Context, rooms []string) ([]int64, error)) *confirmer {
	return &confirmer{read: read}
}

func newBatch() *batch {
	return &batch{rounds: map[string]*round{}, lead: make(chan struct{}, 1)}
}

// join adds a caller for room (under c.mu).
func (b *batch) join(room string) *round {
	r := b.rounds[room]
	if r == nil {
		r = &round{done: make(chan struct{})}
		b.rounds[room] = r
	}
	r.callers++
	return r
}

// wait returns room's event number as read by a read that started after
// the call. ctx bounds the read this caller makes, if it makes one (never
// beyond 2 s, and its cancellation does not cut the read short for the
// others); a caller waits at most as long as a read takes.
func (c *confirmer) wait(ctx context.Context, room string) (int64, error) {
	c.mu.Lock()
	if c.inFlight < maxReads {
		c.inFlight++
		b := newBatch()
		r := b.join(room)
		c.mu.Unlock()
		c.readFor(ctx, b)
		return r.ev, r.err
	}
	if c.next == nil {
		c.next = newBatch()
	}
	b := c.next
	r := b.join(room)
	c.mu.Unlock()
	select {
	case <-r.done:
	case <-b.lead:
		c.readFor(ctx, b)
	}
	return r.ev, r.err
}

// readFor makes b's read, answers its callers, and hands its slot to the
// next batch (or gives it back).
func (c *confirmer) readFor(ctx context.Context, b *batch) {
	defer c.handOn()
	rooms := make([]string, 0, len(b.rounds))
	for room := range b.rounds {
		rooms = append(rooms, room)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	evs, err := c.read(rctx, rooms)
	cancel()
	if err == nil && len(evs) != len(rooms) {
		err = fmt.Errorf("stream: %d event numbers for %d rooms", len(evs), len(rooms))
	}
	for i, room := range rooms {
		r := b.rounds[room]
		if err != nil {
			r.err = err
		} else {
			r.ev = evs[i]
		}
		close(r.done)
	}
}

// handOn passes the ended read's slot to the batch gathered meanwhile, if
// any.
func (c *confirmer) handOn() {
	c.mu.Lock()
	nb := c.next
	c.next = nil
	if nb == nil {
		c.inFlight--
	}
	c.mu.Unlock()
	if nb != nil {
		nb.lead <- struct{}{} // capacity 1, sent once: never blocks
	}
}
