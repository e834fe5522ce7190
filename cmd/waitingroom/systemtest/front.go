package systemtest

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// RedisCounter is a go-redis hook that counts, per kind, the commands one
// client sends: "status" (the status script), "gcra" (a rate-limit
// script), "enter" (a script on a room's ticket counter: the enter script,
// guarded or not), "limited enter" (one that also carries rate-limit keys:
// the enter limits decided inside it), "pass" (the scripts that spend,
// settle or hold a gateway pass: consume, release, restore, hold), "ev"
// (the reads of a room's event
// number that exact polls wait for) and "trips" (round trips: one per
// command sent alone, one per pipeline).
//
// A script is counted when Redis ran it: an EVALSHA answered NOSCRIPT
// (a Redis whose script cache has not seen the script yet, as a fresh one
// in CI has not; the cache is shared by every test on that Redis, so
// whether it knows a script depends on what ran before) is followed by
// the EVAL that runs it, and only that one counts. The instance's own
// loops (admission, sweeps, settings and room refreshes) run none of the
// kinds counted here, so on a test's own client and key prefix the counts
// are the test's requests alone.
type RedisCounter struct {
	scripts map[string]string // SHA-1 → kind

	mu sync.Mutex
	n  map[string]int
}

// CountRedis adds a counter to e's client. Scripts are told apart by the
// SHA-1 of their source, read from the repository, or by their keys.
func CountRedis(t *testing.T, e *Env) *RedisCounter {
	t.Helper()
	c := &RedisCounter{scripts: map[string]string{}, n: map[string]int{}}
	for kind, paths := range map[string][]string{
		"status": {"../../../../queue/scripts/status.lua"},
		"gcra":   {"../../../../server/ratelimit/gcra_lib.lua", "../../../../server/ratelimit/gcra.lua"},
		"pass/0": {"../../../../queue/scripts/consume.lua"},
		"pass/1": {"../../../../queue/scripts/release.lua"},
		"pass/2": {"../../../../queue/scripts/restore.lua"},
		"pass/3": {"../../../../queue/scripts/hold.lua"},
	} {
		var src []byte
		for _, path := range paths {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			src = append(src, b...)
		}
		sum := sha1.Sum(src)
		kind, _, _ = strings.Cut(kind, "/")
		c.scripts[hex.EncodeToString(sum[:])] = kind
	}
	e.Redis.AddHook(c)
	return c
}

func (c *RedisCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *RedisCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		c.count(cmd, err) // a command sent alone: its error is next's
		c.add("trips")
		return err
	}
}

func (c *RedisCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			c.count(cmd, cmd.Err())
		}
		c.add("trips")
		return err
	}
}

// count counts cmd, once answered, by its kind; a script Redis did not
// know (NOSCRIPT) did not run and is not counted.
func (c *RedisCounter) count(cmd redis.Cmder, err error) {
	if redis.HasErrorPrefix(err, "NOSCRIPT") {
		return
	}
	args := cmd.Args()
	switch cmd.Name() {
	case "evalsha":
		if sha, ok := args[1].(string); ok && c.scripts[sha] != "" {
			c.add(c.scripts[sha])
		}
		c.countByKeys(args)
	case "eval":
		if src, ok := args[1].(string); ok {
			sum := sha1.Sum([]byte(src))
			if kind := c.scripts[hex.EncodeToString(sum[:])]; kind != "" {
				c.add(kind)
			}
		}
	case "hget":
		if key, ok := args[1].(string); ok && strings.HasSuffix(key, ":stats") && args[2] == "ev" {
			c.add("ev")
		}
	}
}

// countByKeys counts a script by its keys (args: EVAL or EVALSHA's):
// "enter" when one is a room's ticket counter, "limited enter" when
// rate-limit keys come with it.
func (c *RedisCounter) countByKeys(args []any) {
	n, ok := args[2].(int)
	if !ok || len(args) < 3+n {
		return
	}
	enter, limit := false, false
	for _, k := range args[3 : 3+n] {
		key, _ := k.(string)
		enter = enter || strings.HasSuffix(key, "}:seq")
		limit = limit || strings.Contains(key, ":rl:")
	}
	if enter {
		c.add("enter")
	}
	if enter && limit {
		c.add("limited enter")
	}
}

func (c *RedisCounter) add(kind string) {
	c.mu.Lock()
	c.n[kind]++
	c.mu.Unlock()
}

// Snapshot returns the counts so far.
func (c *RedisCounter) Snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.n))
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// Since returns the counts added since before.
func (c *RedisCounter) Since(before map[string]int) map[string]int {
	out := c.Snapshot()
	for k, v := range before {
		out[k] -= v
	}
	return out
}
