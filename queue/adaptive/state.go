package adaptive

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue"
)

// LimitChange is one change of an adaptive room's limit.
type LimitChange struct {
	At       time.Time
	From, To int64
	Reason   string
}

// State is what the controller last stored for a room.
type State struct {
	Signals Signals
	// At is when the signals were computed (zero: never).
	At         time.Time
	LastChange *LimitChange
	// Ceiling caps the room's growth (Guard).
	Ceiling Ceiling
}

// Fresh reports whether the state is recent: computed within the last
// three windows from a window some instance reported.
func (s State) Fresh(now time.Time) bool {
	return !s.At.IsZero() && !s.Signals.Stale && s.Signals.Window > 0 && now.Sub(s.At) <= 3*s.Signals.Window
}

// readState reads room's controller state. Errors: queue.ErrRoomNotFound
// (an invalid name), queue.ErrUnavailable.
func readState(ctx context.Context, rdb redis.UniversalClient, rooms Rooms, room string) (State, error) {
	if !queue.ValidRoom(room) {
		return State{}, queue.ErrRoomNotFound
	}
	m, err := rdb.HGetAll(ctx, keysOf(rooms, room).adaptive).Result()
	if err != nil {
		return State{}, unavailable("adaptive state", err)
	}
	return decodeState(m), nil
}

func decodeState(m map[string]string) State {
	num := func(f string) int64 { n, _ := strconv.ParseInt(m[f], 10, 64); return n }
	us := func(f string) time.Duration { return time.Duration(num(f)) * time.Microsecond }
	var st State
	if at := num("at"); at > 0 {
		st.At = msTime(at)
	}
	st.Signals = Signals{
		Window: time.Duration(num("win_ms")) * time.Millisecond,
		Orders: num("orders"), Errors: num("errors"),
		P90: us("p90_us"), Baseline: us("base_us"), PoolWait: us("wait_us"),
		Hold: us("hold_us"), Stale: m["stale"] == "1",
	}
	if c := num("cap"); c > 0 {
		st.Ceiling = Ceiling{Limit: c, Until: msTime(num("cap_until"))}
	}
	if lc := num("lc_at"); lc > 0 {
		st.LastChange = &LimitChange{At: msTime(lc), From: num("lc_from"), To: num("lc_to"), Reason: m["lc_reason"]}
	}
	return st
}

// stateFields are the fields adapt.lua stores for a step's signals and
// the ceiling it keeps (cap 0: none).
func stateFields(s Signals, c Ceiling, window time.Duration, now time.Time) []any {
	until := int64(0)
	if c.Limit > 0 {
		until = c.Until.UnixMilli()
	}
	return []any{"at", now.UnixMilli(), "win_ms", window.Milliseconds(),
		"orders", s.Orders, "errors", s.Errors, "p90_us", s.P90.Microseconds(),
		"base_us", s.Baseline.Microseconds(), "wait_us", s.PoolWait.Microseconds(),
		"hold_us", s.Hold.Microseconds(), "stale", boolField(s.Stale),
		"cap", c.Limit, "cap_until", until}
}

func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

func boolField(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
