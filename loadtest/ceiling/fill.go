package ceiling

import (
	"context"
	"fmt"
	"os"
	"time"

	"waitingroom/loadtest/internal/report"
)

// fillResult is the memory one room's waiting users take in Redis.
type fillResult struct {
	Users   int     `json:"users"`
	IDBytes int     `json:"idBytes"` // length of each user id
	Seconds float64 `json:"seconds"`
	// Bytes is used_memory after − before; PerUser that ÷ Users.
	Bytes   int64   `json:"bytes"`
	PerUser float64 `json:"bytesPerUser"`
	// Keys is MEMORY USAGE of the room's keys that grow with the queue.
	Keys map[string]int64 `json:"keys"`
}

// fillRoom enters cfg.fill users into a fresh room (4 connections,
// pipelines of 100) and reads used_memory before and after.
func (r *ceilingRun) fillRoom(ctx context.Context) (*fillResult, error) {
	const room = "fill"
	if err := r.room(ctx, room, 0); err != nil {
		return nil, err
	}
	defer r.dropRoom(context.WithoutCancel(ctx), room)
	before, err := r.rs.Read(ctx)
	if err != nil {
		return nil, err
	}
	users := ids("", 0, r.cfg.fill)
	fmt.Fprintf(os.Stderr, "ceiling: fill: %s users into one room\n", report.Commas(len(users)))
	start := time.Now()
	if err := r.enterAll(ctx, room, users, 4, 100); err != nil {
		return nil, err
	}
	f := &fillResult{Users: len(users), IDBytes: len(users[0]), Seconds: time.Since(start).Seconds(), Keys: map[string]int64{}}
	after, err := r.rs.Read(ctx)
	if err != nil {
		return nil, err
	}
	f.Bytes = after.Memory - before.Memory
	f.PerUser = float64(f.Bytes) / float64(f.Users)
	for _, name := range []string{"queue", "seen"} {
		n, err := r.rdb.MemoryUsage(ctx, r.q.RoomKey(room, name), 0).Result()
		if err != nil {
			return nil, fmt.Errorf("ceiling: fill: MEMORY USAGE %s: %w", name, err)
		}
		f.Keys[name] = n
	}
	return f, nil
}
