package queue

import (
	"context"
	"errors"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// A sharded pre-queue (docs/sharded-prequeue.md): a room whose
// prequeueParts S is above 1 keeps the arrivals before its opening in S
// parts, each under a hash tag of its own, {room~p} for p = 0 … S−1, so
// that a Redis Cluster spreads the opening burst of one hot room over its
// masters. ValidRoom refuses '~', so a part's tag is never a room's. At
// the opening the parts are merged into the room's one queue
// (prequeue_merge.go); admission, positions, pushes and the hub stay the
// room's. This file holds the parts' layout and the setting; a user in a
// part is entered, read and removed in prequeue_parts.go.

// MaxPrequeueParts is the most parts a room's pre-queue may have.
const MaxPrequeueParts = 16

// ErrPrequeueNotEmpty: prequeueParts may change only while the room's
// pre-queue (its own and every part) is empty and no opening is merging.
var ErrPrequeueNotEmpty = errors.New("pre-queue not empty")

// ErrBadParts: prequeueParts outside 1 … MaxPrequeueParts.
var ErrBadParts = errors.New("prequeueParts out of range")

var (
	partEnterScript   = mustScript("penter")
	partSealScript    = mustScript("pseal")
	partShuffleScript = mustScript("pshuffle")
	partTakeScript    = mustScript("ptake")
	partCommitScript  = mustScript("pcommit")
	partLeaveScript   = mustScript("pleave")
	partSyncScript    = mustScript("psync")
	armScript         = mustScript("arm")
	mergeBeginScript  = mustScript("mbegin")
	mergeAppendScript = mustScript("mappend")
	mergeFinishScript = mustScript("mfinish")
)

// PartOf is the part of a room's sharded pre-queue that user enters: FNV-1a
// of the id modulo parts. A user always lands in the same part, so entering
// again finds them there (ZADD NX), and an audit can tell from the id alone
// which part a user was shuffled in (ShuffleParts).
func PartOf(user string, parts int) int {
	if parts <= 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(user))
	return int(h.Sum32() % uint32(parts))
}

// partKeys are the keys of part p of a room, all under the tag {room~p}.
type partKeys struct {
	cfg, prequeue, state, left string
}

func (q *Queue) partKeys(room string, p int) partKeys {
	base := q.prefix + "{" + room + "~" + strconv.Itoa(p) + "}:"
	return partKeys{cfg: base + "cfg", prequeue: base + "prequeue", state: base + "state", left: base + "left"}
}

// mergeKey is the room's record of a sharded opening's merge (prequeue_merge.go).
func (q *Queue) mergeKey(room string) string { return q.RoomKey(room, "merge") }

// partsOf reads room's prequeueParts (1 when unset).
func (q *Queue) partsOf(ctx context.Context, room string) (int, error) {
	s, err := q.rdb.HGet(ctx, q.keys(room).cfg, "prequeue_parts").Result()
	if errors.Is(err, redis.Nil) {
		return 1, nil
	}
	if err != nil {
		return 0, unavailable("room parts", err)
	}
	n, _ := strconv.Atoi(s)
	return min(max(n, 1), MaxPrequeueParts), nil
}

// partSizes reads the size of each of room's parts 0 … parts−1.
func (q *Queue) partSizes(ctx context.Context, room string, parts int) ([]int64, error) {
	cmds := make([]*redis.IntCmd, parts)
	_, err := q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range parts {
			cmds[i] = p.ZCard(ctx, q.partKeys(room, i).prequeue)
		}
		return nil
	})
	if err != nil {
		return nil, unavailable("part sizes", err)
	}
	out := make([]int64, parts)
	for i, c := range cmds {
		out[i] = c.Val()
	}
	return out, nil
}

// syncParts copies room's fields that a part's enter needs to each of
// parts 0 … max(upto, the room's parts)−1 (psync.lua: the copy with the
// higher version wins), and arms the room's merge when an opening is
// scheduled ahead. A part beyond the room's number gets a copy that refuses
// arrivals. parts ≥ 0 overrides the number copied (0: every part refuses,
// while setParts changes it).
func (q *Queue) syncParts(ctx context.Context, room string, upto, parts int) error {
	k := q.keys(room)
	version, err := q.rdb.HIncrBy(ctx, k.cfg, "parts_version", 1).Result()
	if err != nil {
		return unavailable("sync parts", err)
	}
	c, err := q.rdb.HMGet(ctx, k.cfg, "opens_at", "prequeue_parts", "paused", "method").Result()
	if err != nil {
		return unavailable("sync parts", err)
	}
	str := func(i int) string {
		s, _ := c[i].(string)
		return s
	}
	cur, _ := strconv.Atoi(str(1))
	cur = max(cur, 1)
	if parts < 0 {
		parts = cur
	}
	paused := str(2)
	if paused == "" {
		paused = "0"
	}
	for p := range min(max(upto, cur), MaxPrequeueParts) {
		if err := partSyncScript.Run(ctx, q.rdb, []string{q.partKeys(room, p).cfg}, version, str(0), parts, paused, str(3)).Err(); err != nil {
			return unavailable("sync parts", err)
		}
	}
	// Armed only for an opening still to come: a change made after the
	// opening must not hold admission for a merge of nobody. (A room
	// armed earlier stays armed until its merge; a part's first arrival
	// arms it too.)
	if at, err := strconv.ParseInt(str(0), 10, 64); err == nil && parts > 1 && at > time.Now().UnixMilli() {
		return q.arm(ctx, room)
	}
	return nil
}

// setParts changes room's prequeueParts from cur to n: refused
// (ErrPrequeueNotEmpty) unless the room's own pre-queue and every part
// are empty and no merge is under way. The parts first stop taking
// arrivals, then are checked again, so that nobody can be left in a part
// the new number does not send them to.
func (q *Queue) setParts(ctx context.Context, room string, cur, n int) error {
	k := q.keys(room)
	upto := max(cur, n)
	empty := func() error {
		sizes, err := q.partSizes(ctx, room, upto)
		if err != nil {
			return err
		}
		for _, s := range sizes {
			if s > 0 {
				return ErrPrequeueNotEmpty
			}
		}
		pre, err := q.rdb.ZCard(ctx, k.prequeue).Result()
		if err != nil {
			return unavailable("room parts", err)
		}
		st, err := q.rdb.HGet(ctx, k.stats, "pm_state").Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return unavailable("room parts", err)
		}
		if pre > 0 || st == "moving" {
			return ErrPrequeueNotEmpty
		}
		return nil
	}
	if err := empty(); err != nil {
		return err
	}
	if cur > 1 {
		if err := q.syncParts(ctx, room, upto, 0); err != nil {
			return err
		}
		if err := empty(); err != nil {
			if serr := q.syncParts(ctx, room, upto, -1); serr != nil {
				return serr
			}
			return err
		}
	}
	if err := q.rdb.HSet(ctx, k.cfg, "prequeue_parts", n).Err(); err != nil {
		return unavailable("room parts", err)
	}
	if n <= 1 {
		if _, err := q.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, q.mergeKey(room))
			p.HDel(ctx, k.stats, "pm_state")
			return nil
		}); err != nil {
			return unavailable("room parts", err)
		}
	}
	q.routes.forget(room)
	return q.syncParts(ctx, room, upto, -1)
}

// inParts counts the users pre-queued in room's parts, every part there
// may be (DeleteRoom).
func (q *Queue) inParts(ctx context.Context, room string) (int64, error) {
	sizes, err := q.partSizes(ctx, room, MaxPrequeueParts)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, size := range sizes {
		n += size
	}
	return n, nil
}

// unlinkParts removes every part room's pre-queue may have (DeleteRoom,
// once the room is gone): one pipeline, each part on its own slot, an
// UNLINK a part.
func (q *Queue) unlinkParts(ctx context.Context, room string) error {
	if _, err := q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for part := range MaxPrequeueParts {
			pk := q.partKeys(room, part)
			p.Unlink(ctx, pk.cfg, pk.prequeue, pk.state, pk.left)
		}
		return nil
	}); err != nil {
		return unavailable("delete room", err)
	}
	return nil
}
