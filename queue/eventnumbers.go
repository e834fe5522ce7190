package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// EventNumbers reads the rooms' event sequence numbers (the ev of their
// events and snapshots; 0 for a room that has published none), one HGET
// per room, several rooms in one pipeline. Every change that moves a waiting
// user (an admission, a departure, an idle drop, an opening, a change of
// method, pause or message) increments it in the same script that
// publishes it, so a reader whose state has applied event number n knows,
// when a read started later returns n or less, that its state holds every
// such change made before the read.
func (q *Queue) EventNumbers(ctx context.Context, rooms []string) ([]int64, error) {
	if len(rooms) == 1 {
		// One command: cheaper than a pipeline of one.
		n, err := q.rdb.HGet(ctx, q.keys(rooms[0]).stats, "ev").Int64()
		switch {
		case errors.Is(err, redis.Nil):
			return []int64{0}, nil
		case err != nil:
			return nil, unavailable("event numbers", err)
		}
		return []int64{n}, nil
	}
	cmds := make([]*redis.StringCmd, len(rooms))
	_, err := q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, room := range rooms {
			cmds[i] = p.HGet(ctx, q.keys(room).stats, "ev")
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable("event numbers", err)
	}
	out := make([]int64, len(rooms))
	for i, c := range cmds {
		n, err := c.Int64()
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			return nil, fmt.Errorf("queue: event numbers of %s: %w", rooms[i], err)
		default:
			out[i] = n
		}
	}
	return out, nil
}
