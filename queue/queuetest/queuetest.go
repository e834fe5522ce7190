// Package queuetest connects tests to the real Redis that `make test` provides.
//
// Tests never mock Redis. Each test gets a unique key prefix, so tests share
// one Redis without seeing each other's keys, and the keys are deleted when
// the test ends.
//
// Code that uses the default key prefix (a child process configured through
// REDIS_URL) gets a redis-server of its own instead: Server starts one.
package queuetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue"
)

// URL returns the Redis URL for tests: WR_TEST_REDIS_URL, else REDIS_URL,
// else redis://127.0.0.1:6379/0.
func URL() string {
	for _, k := range []string{"WR_TEST_REDIS_URL", "REDIS_URL"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "redis://127.0.0.1:6379/0"
}

// Redis returns a client on the test Redis and a key prefix unique to tb.
// It fails the test (never skips it) when Redis cannot be reached.
func Redis(tb testing.TB) (*redis.Client, string) {
	tb.Helper()
	opt, err := redis.ParseURL(URL())
	if err != nil {
		tb.Fatalf("queuetest: bad WR_TEST_REDIS_URL/REDIS_URL %q: %v", URL(), err)
	}
	rdb := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		tb.Fatalf("queuetest: Redis at %s is unreachable (%v): set WR_TEST_REDIS_URL or run `make test`, which starts one", URL(), err)
	}
	prefix := Prefix()
	tb.Cleanup(func() {
		_ = rdb.Close()
		// A client of its own: the test may have closed its client (to
		// cause an outage) and its keys must go all the same.
		c := redis.NewClient(opt)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		var batch []string
		for iter.Next(ctx) {
			batch = append(batch, iter.Val())
		}
		if len(batch) > 0 {
			c.Del(ctx, batch...)
		}
	})
	return rdb, prefix
}

// Prefix returns a fresh key prefix, e.g. "wrtest:3f9a1c0b:".
func Prefix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "wrtest:" + hex.EncodeToString(b[:]) + ":"
}

// Queue returns a queue on the test's Redis and key prefix with one room,
// "r1", of the given targetActive and entry window, and the client under it.
func Queue(tb testing.TB, target int64, ttl time.Duration) (*queue.Queue, *redis.Client) {
	tb.Helper()
	rdb, prefix := Redis(tb)
	q := queue.New(rdb, queue.Options{Prefix: prefix})
	if err := q.EnsureRoom(context.Background(), "r1", queue.RoomConfig{Target: target, EntryTTL: ttl}); err != nil {
		tb.Fatal(err)
	}
	return q, rdb
}

// Enter enters users, in order, into room "r1" of q, failing the test on
// an error, and returns the last one's status.
func Enter(tb testing.TB, q *queue.Queue, users ...string) queue.Status {
	tb.Helper()
	var st queue.Status
	for _, u := range users {
		var err error
		if st, err = q.Enter(context.Background(), "r1", u); err != nil {
			tb.Fatalf("enter %s: %v", u, err)
		}
	}
	return st
}

// Admit runs one admission of room "r1" of q with tokens free slots,
// failing the test on an error.
func Admit(tb testing.TB, q *queue.Queue, tokens int) queue.AdmitResult {
	tb.Helper()
	res, err := q.Admit(context.Background(), "r1", tokens)
	if err != nil {
		tb.Fatalf("admit: %v", err)
	}
	return res
}

// WaitFor polls cond every 10 ms until it holds, failing the test after
// 10 s: for what a background loop does.
func WaitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
