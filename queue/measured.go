package queue

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Expectation is what a room's ETA stands on, provisionally, until the
// room has measured its own figures (package queue/estimate): the
// operator's expected order time, and what the room measured of its
// orders last (RecordMeasured), carried by every snapshot.
type Expectation struct {
	// Order is the operator's expected order time (RoomConfig.ExpectedOrder;
	// 0: none).
	Order time.Duration
	// LastHold and LastNoShow are the hold and no-show share the room
	// measured last (LastKnown false: never measured, or the room was
	// made anew).
	LastHold   time.Duration
	LastNoShow float64
	LastKnown  bool
	// LastAbsent is the share of users the room's admission found absent
	// at the front last (LastAbsentKnown false: never kept).
	LastAbsent      float64
	LastAbsentKnown bool
}

// RecordMeasured keeps what room has just measured of its orders — the
// mean hold, the no-show share and the share of users absent at the
// front — for its next sale, under MeasuredKey.
// It is written by one instance a room, with each point of the room's
// history (package queue/history), and removed with the room. A room
// deleted meanwhile gets nothing: the write and the check that the room
// exists are one script, so no key outlives its room.
func (q *Queue) RecordMeasured(ctx context.Context, room string, hold time.Duration, noShow, absent float64) error {
	if !ValidRoom(room) {
		return ErrRoomNotFound
	}
	keys := []string{q.RoomKey(room, ConfigKey), q.RoomKey(room, MeasuredKey)}
	err := measuredScript.Run(ctx, q.rdb, keys, hold.Milliseconds(),
		strconv.FormatFloat(noShow, 'f', 4, 64), time.Now().UnixMilli(), strconv.FormatFloat(absent, 'f', 4, 64)).Err()
	if err != nil && err != redis.Nil {
		return unavailable("record measured", err)
	}
	return nil
}
