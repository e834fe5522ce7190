package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue"
)

// Point is one second of a room's history.
type Point struct {
	At       time.Time // the second (Redis clock) the figures were read in
	Waiting  int64     // people in the queue
	Active   int64     // admitted users plus orders in flight
	Target   int64     // targetActive, the limit
	Admitted int64     // users admitted since the previous point
	Rate     float64   // the measured admission rate (users/s)
	// ETA is the estimate the last in line was shown, in seconds (-1:
	// withheld, or nobody waiting); ETAMid the one shown to the user in
	// the middle of the queue, whose ticket is MidTicket.
	ETA, ETAMid int64
	// Seq is the last ticket issued, Head the oldest waiting ticket (0:
	// nobody waiting): when Head passes a point's Seq (MidTicket), its
	// last (middle) in line has had their turn (see ETAErrors). Not in
	// the JSON.
	Seq, Head, MidTicket int64
}

// Fields names the values of a Point's JSON array, in order.
var Fields = []string{"t", "waiting", "active", "targetActive", "admitted", "rate", "etaLast", "etaMid"}

// MarshalJSON writes a point as the compact array of Fields:
// [tMs, waiting, active, targetActive, admitted, rate, etaLast, etaMid],
// the estimates null when withheld.
func (p Point) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 56)
	b = append(b, '[')
	b = strconv.AppendInt(b, p.At.UnixMilli(), 10)
	for _, v := range []int64{p.Waiting, p.Active, p.Target, p.Admitted} {
		b = append(b, ',')
		b = strconv.AppendInt(b, v, 10)
	}
	b = append(b, ',')
	b = append(b, formatRate(p.Rate)...)
	for _, eta := range []int64{p.ETA, p.ETAMid} {
		if eta < 0 {
			b = append(b, ",null"...)
		} else {
			b = append(b, ',')
			b = strconv.AppendInt(b, eta, 10)
		}
	}
	return append(b, ']'), nil
}

// Since returns room's points recorded after since (Unix ms; 0 or less:
// the whole history, at most the last hour), oldest first. A room with no
// history reads as none. Errors: queue.ErrRoomNotFound (an invalid name),
// queue.ErrUnavailable.
func (h *History) Since(ctx context.Context, room string, since int64) ([]Point, error) {
	if !queue.ValidRoom(room) {
		return nil, queue.ErrRoomNotFound
	}
	// At most one point a second: the points after since are among the
	// last (now − since) seconds' worth, with a margin for clocks apart.
	n := int64(Keep)
	if since > 0 {
		n = min(n, (time.Now().UnixMilli()-since)/1000+60)
	}
	if n <= 0 {
		n = 60
	}
	raw, err := h.rdb.LRange(ctx, keysOf(h.rooms, room).points, -n, -1).Result()
	if err != nil {
		return nil, unavailable("read", err)
	}
	out := make([]Point, 0, len(raw))
	for _, r := range raw {
		p, err := parsePoint(r)
		if err != nil {
			return nil, err
		}
		if p.At.UnixMilli() > since {
			out = append(out, p)
		}
	}
	return out, nil
}

// parsePoint reads a stored point (append.lua's array; a point stored
// before the estimates were recorded has six numbers and reads as
// withheld).
func parsePoint(s string) (Point, error) {
	var v []float64
	if err := json.Unmarshal([]byte(s), &v); err != nil || (len(v) != 6 && len(v) != 11) {
		return Point{}, fmt.Errorf("history: a stored point is not an array of 6 or 11 numbers: %q", s)
	}
	p := Point{At: time.UnixMilli(int64(v[0])).UTC(), Waiting: int64(v[1]), Active: int64(v[2]),
		Target: int64(v[3]), Admitted: int64(v[4]), Rate: v[5], ETA: -1, ETAMid: -1}
	if len(v) == 11 {
		p.ETA, p.Seq, p.Head, p.ETAMid, p.MidTicket = int64(v[6]), int64(v[7]), int64(v[8]), int64(v[9]), int64(v[10])
	}
	return p, nil
}

// Wait is how long the oldest waiting user of a room has waited.
type Wait struct {
	Room    string
	Waiting int64
	// Longest is the time since the oldest waiting user's ticket was issued,
	// to the second (from below: the clock knows the second by which a
	// ticket had been issued).
	Longest time.Duration
	// Known is false when nobody waits, or when no instance has recorded
	// the room lately (the history loop is not running).
	Known bool
	// AtLeast: the ticket was issued before the clock's first record (the
	// history started while this user already waited), so the wait is
	// longer than Longest.
	AtLeast bool
}

// Waits reads the longest current wait of each room: the oldest waiting
// ticket (from the room's snapshot) looked up in the ticket clock. Two
// pipelines for all the rooms. Errors: queue.ErrUnavailable.
func (h *History) Waits(ctx context.Context, rooms []string) ([]Wait, error) {
	snaps, err := h.rooms.Snapshots(ctx, rooms)
	if err != nil {
		return nil, err
	}
	first := make([]*redis.ZSliceCmd, len(rooms))
	meta := make([]*redis.SliceCmd, len(rooms))
	_, err = h.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, s := range snaps {
			if _, head := tickets(s); head > 0 {
				k := keysOf(h.rooms, rooms[i])
				first[i] = p.ZRangeByScoreWithScores(ctx, k.tickets, &redis.ZRangeBy{Min: strconv.FormatInt(head, 10), Max: "+inf", Count: 1})
				meta[i] = p.HMGet(ctx, k.meta, "origin", "appended")
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable("waits", err)
	}
	now := time.Now()
	out := make([]Wait, len(rooms))
	for i, s := range snaps {
		out[i] = Wait{Room: rooms[i], Waiting: s.Waiting}
		if first[i] != nil {
			out[i].Longest, out[i].Known, out[i].AtLeast = longest(first[i].Val(), meta[i].Val(), now)
		}
	}
	return out, nil
}

// longest reads one room's wait from the clock's first entry at or above
// the oldest waiting ticket and the history's origin and last second.
func longest(entry []redis.Z, meta []any, now time.Time) (wait time.Duration, known, atLeast bool) {
	secOf := func(v any) int64 {
		s, _ := v.(string)
		n, _ := strconv.ParseInt(s, 10, 64)
		return n
	}
	if len(entry) == 0 {
		// Issued after the last point: under a second ago, if the loop runs.
		last := secOf(meta[1])
		return 0, last > 0 && now.Unix()-last <= 5, false
	}
	sec := secOf(entry[0].Member)
	wait = max(now.Sub(time.Unix(sec, 0)).Truncate(time.Second), 0)
	return wait, true, sec == secOf(meta[0])
}
