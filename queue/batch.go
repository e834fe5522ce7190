package queue

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// batcher sends the scripts of the request paths (enter, status) of
// concurrent callers in one pipeline: one write and one read on each side
// instead of one per caller. On this machine the round trip's system calls
// cost the server and Redis more CPU than the scripts' own work, so under
// load a shared round trip is most of what an enter costs (BENCHMARKS.md,
// "Enter vs a plain Fiber handler").
//
// There is no sender goroutine and no timer: a caller that finds fewer
// than maxPipelines round trips in flight sends its script alone, at once,
// as before. Callers that arrive while maxPipelines are in flight gather
// in the next batch, sent as one pipeline the moment a round trip ends. So
// a lone request waits for nothing, and the busier the instance, the more
// requests share a round trip; a caller waits at most for one round trip
// before its own starts.
//
// A caller whose context ends while it waits returns at once with the
// context's error; its script may still run (as a command that timed out
// may have), which the scripts allow: entering again keeps the first
// place, and a status read changes nothing.
type batcher struct {
	rdb redis.UniversalClient

	mu       sync.Mutex
	inFlight int     // round trips in flight, counting a batch handed on
	next     []*call // callers waiting for a round trip
}

// maxPipelines bounds the round trips in flight from one instance through
// the batcher: two, so that a couple of requests at once do not wait for
// each other, and few enough that a busy instance batches.
const maxPipelines = 2

// call is one caller's script.
type call struct {
	script *redis.Script
	keys   []string
	args   []any
	cmd    *redis.Cmd
	done   chan struct{} // closed once cmd is set (batched calls only)
}

// run runs script with keys and args, alone or in a batch, and returns its
// reply.
func (b *batcher) run(ctx context.Context, script *redis.Script, keys []string, args ...any) (any, error) {
	c := &call{script: script, keys: keys, args: args}
	b.mu.Lock()
	if b.inFlight < maxPipelines {
		b.inFlight++
		b.mu.Unlock()
		c.cmd = script.Run(ctx, b.rdb, keys, args...)
		b.handOn()
		return c.cmd.Result()
	}
	c.done = make(chan struct{})
	b.next = append(b.next, c)
	b.mu.Unlock()
	select {
	case <-c.done:
		return c.cmd.Result()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// handOn ends a round trip: the callers gathered meanwhile go out as one
// pipeline (on a goroutine of its own, which then hands on in turn), or
// the slot is given back.
func (b *batcher) handOn() {
	b.mu.Lock()
	calls := b.next
	b.next = nil
	if len(calls) == 0 {
		b.inFlight--
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	go func() {
		b.send(calls)
		for _, c := range calls {
			close(c.done)
		}
		b.handOn()
	}()
}

// send runs calls in one pipeline. The callers' contexts do not bound it
// (one leaving must not cut the others short); the client's own read and
// write timeouts do. A script Redis does not know yet (NOSCRIPT: a
// restarted or flushed Redis) is run again alone, which loads it.
func (b *batcher) send(calls []*call) {
	ctx := context.Background()
	if len(calls) == 1 {
		c := calls[0]
		c.cmd = c.script.Run(ctx, b.rdb, c.keys, c.args...)
		return
	}
	_, _ = b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, c := range calls {
			c.cmd = c.script.EvalSha(ctx, p, c.keys, c.args...)
		}
		return nil
	})
	for _, c := range calls {
		if redis.HasErrorPrefix(c.cmd.Err(), "NOSCRIPT") {
			c.cmd = c.script.Run(ctx, b.rdb, c.keys, c.args...)
		}
	}
}
