package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Mode is how a room's targetActive is set.
type Mode string

// Modes of a room.
const (
	// ModeFixed: targetActive is what the operator set (the default).
	ModeFixed Mode = "fixed"
	// ModeAdaptive: the limit controller (package queue/adaptive) sets
	// targetActive every window from the downstream's health, within
	// [MinActive, MaxActive].
	ModeAdaptive Mode = "adaptive"
)

// ValidMode reports whether m is a known mode.
func ValidMode(m Mode) bool { return m == ModeFixed || m == ModeAdaptive }

// RoomConfig is a room's live configuration, stored in Redis and read by
// every admission run, so a change applies cluster-wide within one tick.
type RoomConfig struct {
	// Target is targetActive: admitted users plus orders in flight.
	Target int64
	// EntryTTL is how long an entry token stays valid after admission.
	EntryTTL time.Duration
	// Paused rooms admit nobody but still take arrivals into the line;
	// everyone waiting keeps their place, and admission resumes in ticket
	// order when the pause ends. MethodReject is what refuses arrivals.
	Paused bool
	// Mode: ModeFixed (the default) or ModeAdaptive, where the limit
	// controller sets Target within [MinActive, MaxActive].
	Mode Mode
	// MinActive and MaxActive bound an adaptive room's Target; 0 means the
	// configured default (the adaptive controller's Rule.Min, Rule.Max).
	MinActive, MaxActive int64
	// Method is the queueing method ("" reads as MethodFIFO).
	Method Method
	// OpensAt is the scheduled opening (zero: none). Before it, arrivals
	// wait in the pre-queue and nobody is admitted.
	OpensAt time.Time
	// Message is the operator's message to the room's waiting users ("":
	// none). It is carried by their statuses, polled and pushed.
	Message string
	// DisplayName and Description are what the waiting-room page shows
	// of the room ("": the page falls back to the room's name).
	DisplayName, Description string
	// ExpectedOrder is the operator's expectation of an order's time, from
	// admission to the slot's release (0: none): the ETA stands on it,
	// provisionally, until the room has measured its own (queue/estimate).
	ExpectedOrder time.Duration
	// PrequeueParts is how many parts the room's pre-queue is spread over
	// (prequeue.go): 0 (as read for an unsharded room) or 1 keeps it in the
	// room's own keys.
	PrequeueParts int
}

// RoomUpdate changes some fields of a RoomConfig; nil fields stay.
type RoomUpdate struct {
	Target   *int64
	EntryTTL *time.Duration
	Paused   *bool
	Mode     *Mode
	// MinActive, MaxActive: 0 returns to the configured default.
	MinActive, MaxActive *int64
	Method               *Method
	// OpensAt sets the opening time; a zero time clears it (the next
	// admission run then opens the room if its pre-queue holds anyone).
	OpensAt *time.Time
	// Message, DisplayName, Description: "" clears.
	Message, DisplayName, Description *string
	// ExpectedOrder: 0 clears.
	ExpectedOrder *time.Duration
	// PrequeueParts: 1 … MaxPrequeueParts; changed only while the
	// pre-queue is empty (ErrPrequeueNotEmpty).
	PrequeueParts *int
}

// fields returns the configuration fields u sets and those it clears
// (an empty text). Method and OpensAt are the schedule script's.
func (u RoomUpdate) fields() (set []any, clear []string) {
	if u.Target != nil {
		set = append(set, "target", *u.Target)
	}
	if u.EntryTTL != nil {
		set = append(set, "ttl_ms", u.EntryTTL.Milliseconds())
	}
	if u.Paused != nil {
		set = append(set, "paused", boolField(*u.Paused))
	}
	if u.Mode != nil {
		set = append(set, "mode", string(*u.Mode))
	}
	if u.MinActive != nil {
		set = append(set, "min_active", *u.MinActive)
	}
	if u.MaxActive != nil {
		set = append(set, "max_active", *u.MaxActive)
	}
	switch {
	case u.ExpectedOrder == nil:
	case *u.ExpectedOrder <= 0:
		clear = append(clear, "expected_order_ms")
	default:
		set = append(set, "expected_order_ms", u.ExpectedOrder.Milliseconds())
	}
	for _, t := range []struct {
		field string
		v     *string
	}{{"message", u.Message}, {"display_name", u.DisplayName}, {"description", u.Description}} {
		switch {
		case t.v == nil:
		case *t.v == "":
			clear = append(clear, t.field)
		default:
			set = append(set, t.field, *t.v)
		}
	}
	return set, clear
}

// told reports whether u changes what waiting users are told — the method,
// the opening time, the pause or the message — which the schedule script
// publishes as one config event.
func (u RoomUpdate) told() bool {
	return u.Method != nil || u.OpensAt != nil || u.Paused != nil || u.Message != nil
}

// RoomInfo is a room's configuration and live figures.
type RoomInfo struct {
	Name string
	RoomConfig
	Waiting   int64
	Active    int64
	Rate      float64 // measured admissions per second (0: not yet measured)
	Serving   int64   // ticket of the last admitted user
	Entered   int64   // new tickets issued, all time
	Admitted  int64   // users admitted, all time
	Expired   int64   // admissions whose window ended unused
	Left      int64   // waiting users who left
	Abandoned int64   // waiting users removed for not being seen
	// PassedOver counts the absent users the admission passed over, each
	// once (presence-aware admission; see admit.lua).
	PassedOver int64
	PreQueue   int64 // users waiting for the scheduled opening
	// ShuffleSeed is the seed of the last opening's shuffle ("" when the
	// last opening was not random, or there was none); Shuffled is how
	// many users it shuffled (see Shuffle).
	ShuffleSeed string
	Shuffled    int64
	// ShuffleParts is how many parts the last random opening merged (1:
	// not sharded; then Shuffle reproduces it, else ShuffleParts).
	ShuffleParts int
	OpenedAt     time.Time // the last opening (zero: none)
}

func boolField(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// EnsureRoom creates room with cfg unless it exists; an existing room keeps
// its configuration.
func (q *Queue) EnsureRoom(ctx context.Context, room string, cfg RoomConfig) error {
	if !ValidRoom(room) {
		return fmt.Errorf("queue: ensure room %q: %w", room, ErrRoomNotFound)
	}
	k := q.keys(room)
	_, err := q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSetNX(ctx, k.cfg, "target", cfg.Target)
		p.HSetNX(ctx, k.cfg, "ttl_ms", cfg.EntryTTL.Milliseconds())
		p.HSetNX(ctx, k.cfg, "paused", boolField(cfg.Paused))
		if !cfg.OpensAt.IsZero() {
			p.HSetNX(ctx, k.cfg, "opens_at", cfg.OpensAt.UnixMilli())
		}
		if cfg.ExpectedOrder > 0 {
			p.HSetNX(ctx, k.cfg, "expected_order_ms", cfg.ExpectedOrder.Milliseconds())
		}
		if cfg.PrequeueParts > 1 {
			p.HSetNX(ctx, k.cfg, "prequeue_parts", min(cfg.PrequeueParts, MaxPrequeueParts))
		}
		for field, v := range map[string]string{"mode": string(cfg.Mode), "method": string(cfg.Method),
			"message": cfg.Message, "display_name": cfg.DisplayName, "description": cfg.Description} {
			if v != "" {
				p.HSetNX(ctx, k.cfg, field, v)
			}
		}
		p.SAdd(ctx, q.roomsKey(), room)
		return nil
	})
	if err != nil {
		return unavailable("ensure room", err)
	}
	if cfg.PrequeueParts > 1 {
		return q.syncParts(ctx, room, cfg.PrequeueParts, -1)
	}
	return nil
}

// UpdateRoom changes room's configuration. With create, a missing room is
// created from defaults first; without, it is ErrRoomNotFound. A change of
// what waiting users are told (method, opening time, pause, message) is
// published as one config event once stored, so every instance's streams
// show it at once.
func (q *Queue) UpdateRoom(ctx context.Context, room string, u RoomUpdate, create bool, defaults RoomConfig) (RoomInfo, error) {
	if !ValidRoom(room) {
		return RoomInfo{}, ErrRoomNotFound
	}
	k := q.keys(room)
	if create {
		if err := q.EnsureRoom(ctx, room, defaults); err != nil {
			return RoomInfo{}, err
		}
	} else {
		n, err := q.rdb.Exists(ctx, k.cfg).Result()
		if err != nil {
			return RoomInfo{}, unavailable("update room", err)
		}
		if n == 0 {
			return RoomInfo{}, ErrRoomNotFound
		}
	}
	if u.PrequeueParts != nil {
		n := *u.PrequeueParts
		if n < 1 || n > MaxPrequeueParts {
			return RoomInfo{}, fmt.Errorf("queue: update room %s: prequeueParts %d: %w", room, n, ErrBadParts)
		}
		cur, err := q.partsOf(ctx, room)
		if err != nil {
			return RoomInfo{}, err
		}
		if n != cur {
			if err := q.setParts(ctx, room, cur, n); err != nil {
				return RoomInfo{}, err
			}
		}
	}
	set, clear := u.fields()
	if len(set) > 0 || len(clear) > 0 {
		_, err := q.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			if len(set) > 0 {
				p.HSet(ctx, k.cfg, set...)
			}
			if len(clear) > 0 {
				p.HDel(ctx, k.cfg, clear...)
			}
			return nil
		})
		if err != nil {
			return RoomInfo{}, unavailable("update room", err)
		}
	}
	if u.told() {
		if err := q.schedule(ctx, room, u.Method, u.OpensAt); err != nil {
			return RoomInfo{}, err
		}
	}
	if u.told() || u.PrequeueParts != nil {
		// The parts' copies follow the room (and a sharded room with an
		// opening scheduled is armed for its merge).
		parts, err := q.partsOf(ctx, room)
		if err != nil {
			return RoomInfo{}, err
		}
		if parts > 1 {
			if err := q.syncParts(ctx, room, parts, -1); err != nil {
				return RoomInfo{}, err
			}
		}
	}
	return q.Room(ctx, room)
}

// parseConfig reads a room's configuration hash (empty fields: defaults).
func parseConfig(c map[string]string) RoomConfig {
	var cfg RoomConfig
	cfg.Target, _ = strconv.ParseInt(c["target"], 10, 64)
	ttl, _ := strconv.ParseInt(c["ttl_ms"], 10, 64)
	cfg.EntryTTL = time.Duration(ttl) * time.Millisecond
	cfg.Paused = c["paused"] == "1"
	cfg.Mode = ModeFixed
	if m := Mode(c["mode"]); ValidMode(m) {
		cfg.Mode = m
	}
	cfg.MinActive, _ = strconv.ParseInt(c["min_active"], 10, 64)
	cfg.MaxActive, _ = strconv.ParseInt(c["max_active"], 10, 64)
	cfg.Method = MethodFIFO
	if m, ok := ParseMethod(c["method"]); ok {
		cfg.Method = m
	}
	if at, err := strconv.ParseInt(c["opens_at"], 10, 64); err == nil {
		cfg.OpensAt = msTime(at)
	}
	cfg.Message, cfg.DisplayName, cfg.Description = c["message"], c["display_name"], c["description"]
	if ms, err := strconv.ParseInt(c["expected_order_ms"], 10, 64); err == nil && ms > 0 {
		cfg.ExpectedOrder = time.Duration(ms) * time.Millisecond
	}
	if n, err := strconv.Atoi(c["prequeue_parts"]); err == nil && n > 1 {
		cfg.PrequeueParts = min(n, MaxPrequeueParts)
	}
	return cfg
}

// Room returns room's configuration and live figures.
func (q *Queue) Room(ctx context.Context, room string) (RoomInfo, error) {
	if !ValidRoom(room) {
		return RoomInfo{}, ErrRoomNotFound
	}
	var r roomRead
	_, err := q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		r = q.readRoom(ctx, p, room)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return RoomInfo{}, unavailable("room", err)
	}
	info, ok := r.info(room)
	if !ok {
		return RoomInfo{}, ErrRoomNotFound
	}
	if err := q.addParts(ctx, []*RoomInfo{&info}); err != nil {
		return RoomInfo{}, err
	}
	return info, nil
}

// RoomInfos returns the configuration and live figures of each of rooms
// that exists, in their order (a missing room or an invalid name is left
// out): one pipeline for all of them, so a page of rooms costs one round
// trip whatever its length.
func (q *Queue) RoomInfos(ctx context.Context, rooms []string) ([]RoomInfo, error) {
	reads := make([]*roomRead, len(rooms))
	_, err := q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, room := range rooms {
			if ValidRoom(room) {
				r := q.readRoom(ctx, p, room)
				reads[i] = &r
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable("rooms", err)
	}
	out := make([]RoomInfo, 0, len(rooms))
	for i, r := range reads {
		if r == nil {
			continue
		}
		if info, ok := r.info(rooms[i]); ok {
			out = append(out, info)
		}
	}
	sharded := make([]*RoomInfo, 0)
	for i := range out {
		if out[i].PrequeueParts > 1 {
			sharded = append(sharded, &out[i])
		}
	}
	if err := q.addParts(ctx, sharded); err != nil {
		return nil, err
	}
	return out, nil
}

// addParts adds to each of infos' PreQueue what its parts hold (a
// sharded pre-queue: one pipeline for all).
func (q *Queue) addParts(ctx context.Context, infos []*RoomInfo) error {
	cmds := make([][]*redis.IntCmd, len(infos))
	var any bool
	_, err := q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, info := range infos {
			for part := range min(info.PrequeueParts, MaxPrequeueParts) {
				if info.PrequeueParts > 1 {
					cmds[i] = append(cmds[i], p.ZCard(ctx, q.partKeys(info.Name, part).prequeue))
					any = true
				}
			}
		}
		return nil
	})
	if !any {
		return nil
	}
	if err != nil {
		return unavailable("room parts", err)
	}
	for i, info := range infos {
		for _, c := range cmds[i] {
			info.PreQueue += c.Val()
		}
	}
	return nil
}

// roomRead is one room's reads queued on a pipeline (readRoom).
type roomRead struct {
	cfg                  *redis.MapStringStringCmd
	stats                *redis.SliceCmd
	waiting, active, pre *redis.IntCmd
}

// readRoom queues on p the reads of room's configuration and figures.
func (q *Queue) readRoom(ctx context.Context, p redis.Pipeliner, room string) roomRead {
	k := q.keys(room)
	return roomRead{
		cfg: p.HGetAll(ctx, k.cfg),
		stats: p.HMGet(ctx, k.stats, "rate", "serving", "entered", "admitted", "expired", "left", "abandoned",
			"shuffle_seed", "shuffled", "opened_ms", "passed", "shuffle_parts"),
		waiting: p.ZCard(ctx, k.queue),
		pre:     p.ZCard(ctx, k.prequeue),
		active:  p.ZCard(ctx, k.active),
	}
}

// info decodes the reads of room once the pipeline ran; ok is false when
// the room does not exist (no configuration).
func (r roomRead) info(room string) (RoomInfo, bool) {
	c := r.cfg.Val()
	if len(c) == 0 {
		return RoomInfo{}, false
	}
	info := RoomInfo{Name: room, RoomConfig: parseConfig(c), Waiting: r.waiting.Val(), Active: r.active.Val(), PreQueue: r.pre.Val()}
	s := r.stats.Val()
	num := func(i int) float64 {
		if i < len(s) {
			if str, ok := s[i].(string); ok {
				f, _ := strconv.ParseFloat(str, 64)
				return f
			}
		}
		return 0
	}
	info.Rate = num(0)
	info.Serving = int64(num(1))
	info.Entered = int64(num(2))
	info.Admitted = int64(num(3))
	info.Expired = int64(num(4))
	info.Left = int64(num(5))
	info.Abandoned = int64(num(6))
	if len(s) > 7 {
		if seed, ok := s[7].(string); ok {
			info.ShuffleSeed = seed
		}
	}
	info.Shuffled = int64(num(8))
	info.ShuffleParts = max(int(num(11)), 1)
	if at := int64(num(9)); at > 0 {
		info.OpenedAt = msTime(at)
	}
	info.PassedOver = int64(num(10))
	return info, true
}

// ConfigOf returns room's configuration, without live figures: one read
// of its configuration hash. Errors: ErrRoomNotFound (also for an invalid
// name, which costs no read), ErrUnavailable.
func (q *Queue) ConfigOf(ctx context.Context, room string) (RoomConfig, error) {
	if !ValidRoom(room) {
		return RoomConfig{}, ErrRoomNotFound
	}
	c, err := q.rdb.HGetAll(ctx, q.keys(room).cfg).Result()
	if err != nil {
		return RoomConfig{}, unavailable("room config", err)
	}
	if len(c) == 0 {
		return RoomConfig{}, ErrRoomNotFound
	}
	return parseConfig(c), nil
}

// RoomConfigs returns every room's configuration, without live figures, by
// name: one read of the room set and one pipeline of one read per room.
func (q *Queue) RoomConfigs(ctx context.Context) (map[string]RoomConfig, error) {
	names, err := q.Rooms(ctx)
	if err != nil {
		return nil, err
	}
	cmds := make([]*redis.MapStringStringCmd, len(names))
	_, err = q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range names {
			cmds[i] = p.HGetAll(ctx, q.keys(n).cfg)
		}
		return nil
	})
	if err != nil {
		return nil, unavailable("room configs", err)
	}
	out := make(map[string]RoomConfig, len(names))
	for i, n := range names {
		if c := cmds[i].Val(); len(c) > 0 {
			out[n] = parseConfig(c)
		}
	}
	return out, nil
}

// HasRooms reports whether any room exists, in one command whatever their
// number: none once the room set is gone, as from a Redis that lost its
// data. Errors: ErrUnavailable.
func (q *Queue) HasRooms(ctx context.Context) (bool, error) {
	n, err := q.rdb.Exists(ctx, q.roomsKey()).Result()
	if err != nil {
		return false, unavailable("room set", err)
	}
	return n > 0, nil
}

// Rooms returns the names of all rooms, sorted.
func (q *Queue) Rooms(ctx context.Context) ([]string, error) {
	names, err := q.rdb.SMembers(ctx, q.roomsKey()).Result()
	if err != nil {
		return nil, unavailable("rooms", err)
	}
	slices.Sort(names)
	return names, nil
}
