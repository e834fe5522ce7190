package queue

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// MissingRooms returns those of rooms that do not exist, in their order
// (nil when all do). A room exists while its configuration hash does: the
// enter script's own test, so a room named here is one whose enters answer
// ErrRoomNotFound; an invalid name is always missing.
//
// It is a readiness check, so it costs one round trip whatever the number
// of rooms: one pipeline of one EXISTS per room (not one EXISTS of every
// key, which a Redis Cluster refuses when the rooms' hash slots differ; the
// cluster client sends the pipeline to each node holding a room at once).
// No room: no call at all.
func (q *Queue) MissingRooms(ctx context.Context, rooms []string) ([]string, error) {
	if len(rooms) == 0 {
		return nil, nil
	}
	cmds := make([]*redis.IntCmd, len(rooms))
	_, err := q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, room := range rooms {
			if ValidRoom(room) {
				cmds[i] = p.Exists(ctx, q.RoomKey(room, ConfigKey))
			}
		}
		return nil
	})
	if err != nil {
		return nil, unavailable("missing rooms", err)
	}
	var missing []string
	for i, c := range cmds {
		if c == nil || c.Val() == 0 {
			missing = append(missing, rooms[i])
		}
	}
	return missing, nil
}
