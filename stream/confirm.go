package stream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// errNotRunning: the hub is not running (not yet started, or stopped), so
// nobody reads event numbers; the caller asks Redis itself.
var errNotRunning = errors.New("stream: hub not running")

// confirmer batches the reads of rooms' event numbers that exact polls
// wait for (PositionNow). Every caller waits for a read that STARTS after
// it arrived, so the number it gets bounds every event published before
// its request; one read — one pipeline for every room asked meanwhile —
// answers all the callers that arrived before it started. While a read is
// in flight, new callers gather for the next one: the busier the instance,
// the more polls share a round trip.
type confirmer struct {
	read func(ctx context.Context, rooms []string) ([]int64, error)
	wake chan struct{} // capacity 1: "callers are waiting"

	mu      sync.Mutex
	running bool
	pending map[string]*round // callers waiting for the next read, by room
}

// round is one room's share of one read.
type round struct {
	done    chan struct{} // closed once ev or err is set
	ev      int64
	err     error
	callers int // how many callers wait for it (under confirmer.mu)
}

func newConfirmer(read func(ctx context.Context, rooms []string) ([]int64, error)) *confirmer {
	return &confirmer{read: read, wake: make(chan struct{}, 1), pending: map[string]*round{}}
}

// wait returns room's event number as read by a read that started after
// the call. It fails at once when the hub is not running.
func (c *confirmer) wait(ctx context.Context, room string) (int64, error) {
	c.mu.Lock()
	if !c.running {
		c.mu.Unlock()
		return 0, errNotRunning
	}
	r := c.pending[room]
	if r == nil {
		r = &round{done: make(chan struct{})}
		c.pending[room] = r
	}
	r.callers++
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	select {
	case <-r.done:
		return r.ev, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// run reads for the waiting callers until ctx is done; callers still
// waiting then fail (errNotRunning), and so do later ones.
func (c *confirmer) run(ctx context.Context) {
	c.mu.Lock()
	c.running = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.running = false
		left := c.take()
		c.mu.Unlock()
		for _, r := range left {
			r.err = errNotRunning
			close(r.done)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		}
		if ctx.Err() != nil {
			return
		}
		c.mu.Lock()
		batch := c.take()
		c.mu.Unlock()
		if len(batch) > 0 {
			c.readBatch(ctx, batch)
		}
	}
}

// take returns the pending rounds, if any, and starts a new gathering
// (under c.mu).
func (c *confirmer) take() map[string]*round {
	batch := c.pending
	if len(batch) == 0 {
		return nil
	}
	c.pending = map[string]*round{}
	return batch
}

// readBatch reads the event numbers of batch's rooms in one call and
// answers their callers.
func (c *confirmer) readBatch(ctx context.Context, batch map[string]*round) {
	rooms := make([]string, 0, len(batch))
	for room := range batch {
		rooms = append(rooms, room)
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	evs, err := c.read(rctx, rooms)
	cancel()
	if err == nil && len(evs) != len(rooms) {
		err = fmt.Errorf("stream: %d event numbers for %d rooms", len(evs), len(rooms))
	}
	for i, room := range rooms {
		r := batch[room]
		if err != nil {
			r.err = err
		} else {
			r.ev = evs[i]
		}
		close(r.done)
	}
}
