package queue

import (
	"context"
	"strconv"
	"time"
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
}

// RecordMeasured keeps what room has just measured of its orders — the
// mean hold and the no-show share — for its next sale, under MeasuredKey.
// It is written by one instance a room, with each point of the room's
// history (package queue/history), and removed with the room.
func (q *Queue) RecordMeasured(ctx context.Context, room string, hold time.Duration, noShow float64) error {
	if !ValidRoom(room) {
		return ErrRoomNotFound
	}
	err := q.rdb.HSet(ctx, q.RoomKey(room, MeasuredKey), "hold_ms", hold.Milliseconds(),
		"no_show", strconv.FormatFloat(noShow, 'f', 4, 64), "at_ms", time.Now().UnixMilli()).Err()
	if err != nil {
		return unavailable("record measured", err)
	}
	return nil
}
