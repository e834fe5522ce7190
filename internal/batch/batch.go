// Package batch runs the Redis scripts of concurrent callers in shared
// round trips. On this machine the round trip's system calls cost the
// server and Redis more CPU than a script's own work, so under load a
// shared round trip is most of what an enter, a status read at the front
// or a rate-limit decision costs (docs/bench/polls-and-enter.md, "Enter
// vs a plain Fiber handler").
//
// There is no sender goroutine and no timer: a caller that finds fewer
// than MaxInFlight round trips in flight sends its script alone, at once,
// as it would without the package. Callers that arrive while MaxInFlight
// are in flight gather in the next batch, sent as one pipeline the moment
// a round trip ends. So a lone request waits for nothing, the busier the
// instance the more requests share a round trip, and a caller waits at
// most one round trip before its own starts. On a Redis Cluster the client
// splits a pipeline by node, so a batch is one round trip per node.
//
// A caller whose context ends while it waits returns at once with the
// context's error; its script may still run, as a command that timed out
// may have. Callers must use scripts for which that is safe (entering
// again keeps the first place; a status read changes nothing; a rate
// limit charged for a request that was not made errs on the strict side).
//
// Imports: go-redis only.
package batch

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Client is what a Runner needs of a go-redis client: any of
// redis.UniversalClient's.
type Client interface {
	redis.Scripter
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
}

// MaxInFlight bounds the round trips in flight from one Runner: two, so
// that a couple of requests at once do not wait for each other, and few
// enough that a busy instance batches.
const MaxInFlight = 2

// Runner runs scripts on one client, batching concurrent callers. It is
// safe for concurrent use.
type Runner struct {
	rdb Client

	mu       sync.Mutex
	inFlight int     // round trips in flight, counting a batch handed on
	next     []*call // callers waiting for a round trip
}

// New returns a Runner on rdb.
func New(rdb Client) *Runner { return &Runner{rdb: rdb} }

// Client is the client the Runner runs on.
func (b *Runner) Client() Client { return b.rdb }

// call is one caller's script.
type call struct {
	script *redis.Script
	keys   []string
	args   []any
	cmd    *redis.Cmd
	done   chan struct{} // closed once cmd is set (batched calls only)
}

// Run runs script with keys and args, alone or in a batch, as
// script.Run(ctx, rdb, keys, args...) would.
func (b *Runner) Run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	c := &call{script: script, keys: keys, args: args}
	if !b.do(ctx, []*call{c}) {
		return ended(ctx)
	}
	return c.cmd
}

// Script is one script of RunAll, with its keys and args.
type Script struct {
	Script *redis.Script
	Keys   []string
	Args   []any
}

// RunAll runs one caller's scripts in one round trip (a pipeline of their
// own, or the next batch, which they join together) and returns their
// commands in order: e.g. decisions on keys of different Cluster slots,
// which one script cannot take.
func (b *Runner) RunAll(ctx context.Context, scripts ...Script) []*redis.Cmd {
	calls := make([]*call, len(scripts))
	for i, sc := range scripts {
		calls[i] = &call{script: sc.Script, keys: sc.Keys, args: sc.Args}
	}
	ok := b.do(ctx, calls)
	cmds := make([]*redis.Cmd, len(calls))
	for i, c := range calls {
		if !ok {
			cmds[i] = ended(ctx)
			continue
		}
		cmds[i] = c.cmd
	}
	return cmds
}

// do runs calls in one round trip: at once when fewer than MaxInFlight
// are in flight, else in the next batch. It reports false when ctx ended
// first (the calls may still run; their commands are not to be read).
func (b *Runner) do(ctx context.Context, calls []*call) bool {
	b.mu.Lock()
	if b.inFlight < MaxInFlight {
		b.inFlight++
		b.mu.Unlock()
		b.send(ctx, calls)
		b.handOn()
		return true
	}
	for _, c := range calls {
		c.done = make(chan struct{})
	}
	b.next = append(b.next, calls...)
	b.mu.Unlock()
	for _, c := range calls {
		select {
		case <-c.done:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// ended is the command of a caller whose context ended while it waited.
func ended(ctx context.Context) *redis.Cmd {
	cmd := redis.NewCmd(ctx)
	cmd.SetErr(ctx.Err())
	return cmd
}

// Waiting is how many callers wait for a round trip now.
func (b *Runner) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.next)
}

// handOn ends a round trip: the callers gathered meanwhile go out as one
// pipeline (on a goroutine of its own, which then hands on in turn), or
// the slot is given back.
func (b *Runner) handOn() {
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
		b.send(context.Background(), calls)
		for _, c := range calls {
			close(c.done)
		}
		b.handOn()
	}()
}

// send runs calls in one pipeline. A batch of several callers is sent
// with context.Background (one leaving must not cut the others short);
// the client's own read and write timeouts bound it. A script Redis does
// not know yet (NOSCRIPT: a restarted or flushed Redis) is run again
// alone, which loads it.
func (b *Runner) send(ctx context.Context, calls []*call) {
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
