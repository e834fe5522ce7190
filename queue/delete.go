package queue

import (
	"context"
	"errors"
	"fmt"
)

// ErrRoomNotEmpty: someone waits in the room, is pre-queued for its
// opening or is admitted, and the delete was not forced.
var ErrRoomNotEmpty = errors.New("room not empty")

var deleteScript = mustScript("delete")

// Deleted is who was in a room when DeleteRoom was called: those removed
// by a forced delete, or those who made an unforced one refuse.
type Deleted struct {
	Waiting, PreQueue, Admitted int64
}

// Anyone reports whether anyone was in the room.
func (d Deleted) Anyone() bool { return d.Waiting+d.PreQueue+d.Admitted > 0 }

// DeleteRoom removes room and every key of it under its hash tag that
// would outlive it or be inherited by a room created again under its
// name: the queue's own keys, and those of also (names for RoomKey, e.g.
// the adaptive controller's state and the history: the packages beside
// the queue own them, the caller names them). One script checks and
// removes, so an enter racing the delete is either refused as
// room_not_found or counted in the room it removes; without force a room
// anyone is in is refused with ErrRoomNotEmpty and nothing changes.
//
// What is left expires by itself: a user's gateway session and the
// restore count of an entry token (each with its window), and the adaptive
// controller's per-window signals and leases (a few windows). The room's
// name leaves the room set after the script; a room created again
// meanwhile keeps its name there.
//
// Errors: ErrRoomNotFound (no such room: nothing changed), ErrRoomNotEmpty
// (with who is in it), ErrUnavailable.
func (q *Queue) DeleteRoom(ctx context.Context, room string, force bool, also ...string) (Deleted, error) {
	if !ValidRoom(room) {
		return Deleted{}, ErrRoomNotFound
	}
	k := q.keys(room)
	keys := []string{k.cfg, k.queue, k.prequeue, k.active, k.stats, k.seq, k.tokens, k.gone, k.seen, k.idle, k.back,
		q.RoomKey(room, MeasuredKey), q.mergeKey(room)}
	// The parts of a sharded pre-queue live on other slots: counted
	// here, removed once the room is gone.
	inParts, err := q.inParts(ctx, room)
	if err != nil {
		return Deleted{}, err
	}
	if inParts > 0 && !force {
		n, err := q.rdb.Exists(ctx, k.cfg).Result()
		if err != nil {
			return Deleted{}, unavailable("delete room", err)
		}
		if n == 0 {
			return Deleted{}, ErrRoomNotFound
		}
		return Deleted{PreQueue: inParts}, fmt.Errorf("queue: delete room %s: %w", room, ErrRoomNotEmpty)
	}
	for _, name := range also {
		keys = append(keys, q.RoomKey(room, name))
	}
	v, err := deleteScript.Run(ctx, q.rdb, keys, boolField(force), k.channel, room).Result()
	if err != nil {
		return Deleted{}, unavailable("delete room", err)
	}
	r := asReply("delete", v)
	status := r.int(0)
	d := Deleted{Waiting: r.int(1), PreQueue: r.int(2) + inParts, Admitted: r.int(3)}
	switch {
	case r.err != nil:
		return Deleted{}, r.err
	case status == -1:
		return Deleted{}, ErrRoomNotFound
	case status == 0:
		return d, fmt.Errorf("queue: delete room %s: %w", room, ErrRoomNotEmpty)
	}
	if err := q.unlinkParts(ctx, room); err != nil {
		return d, err
	}
	q.routes.forget(room)
	if err := q.forget(ctx, room); err != nil {
		return d, err
	}
	return d, nil
}

// forget takes a deleted room's name out of the room set. A room created
// again under the name since the script ran (EnsureRoom adds the name
// after creating the configuration) gets its name back: a name left in
// the set without a room is skipped by every reader, a room missing from
// it would never be admitted.
func (q *Queue) forget(ctx context.Context, room string) error {
	if err := q.rdb.SRem(ctx, q.roomsKey(), room).Err(); err != nil {
		return unavailable("delete room", err)
	}
	n, err := q.rdb.Exists(ctx, q.RoomKey(room, ConfigKey)).Result()
	if err != nil {
		return unavailable("delete room", err)
	}
	if n > 0 {
		if err := q.rdb.SAdd(ctx, q.roomsKey(), room).Err(); err != nil {
			return unavailable("delete room", err)
		}
	}
	return nil
}
