package queue

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Busy reports, for each of rooms in order, whether the room has work:
// someone waiting, pre-queued for an opening, or admitted and not yet
// expired. A room with none of them needs no admission run, no history
// point and no re-read: it costs nothing until someone enters.
//
// It costs one command per room, whatever the room holds: one EXISTS of
// the room's queue, pre-queue, active set and merge record (a sharded
// pre-queue's opening to come, prequeue_merge.go; an empty sorted set does
// not exist; the three share the room's hash slot, so a Redis Cluster
// takes it), all rooms in one pipeline. An invalid name is never busy.
func (q *Queue) Busy(ctx context.Context, rooms []string) ([]bool, error) {
	out := make([]bool, len(rooms))
	if len(rooms) == 0 {
		return out, nil
	}
	cmds := make([]*redis.IntCmd, len(rooms))
	_, err := q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, room := range rooms {
			if ValidRoom(room) {
				k := q.keys(room)
				cmds[i] = p.Exists(ctx, k.queue, k.prequeue, k.active, q.mergeKey(room))
			}
		}
		return nil
	})
	if err != nil {
		return nil, unavailable("busy rooms", err)
	}
	for i, c := range cmds {
		out[i] = c != nil && c.Val() > 0
	}
	return out, nil
}
