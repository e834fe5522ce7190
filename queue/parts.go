package queue

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A sharded pre-queue (docs/sharded-prequeue.md): a room whose
// prequeueParts S is above 1 keeps the arrivals before its opening in S
// parts, each under a hash tag of its own, {room~p} for p = 0 … S−1, so
// that a Redis Cluster spreads the opening burst of one hot room over its
// masters. ValidRoom refuses '~', so a part's tag is never a room's. At
// the opening the parts are merged into the room's one queue (merge.go);
// admission, positions, pushes and the hub stay the room's.

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

// mergeKey is the room's record of a sharded opening's merge (merge.go).
func (q *Queue) mergeKey(room string) string { return q.RoomKey(room, "merge") }

// partsTTL is how long an instance sends a room's enters straight to the
// parts after the room last said its pre-queue is sharded (the PART
// answer of enter.lua): the burst then costs the room's shard nothing.
const partsTTL = time.Second

// partRoute is what an instance last heard of a room's sharded pre-queue.
type partRoute struct {
	parts  int
	direct bool // the room's queue and active set were empty: enter the part first
	until  time.Time
}

// partRoutes remembers the rooms whose enter said PART (never the others:
// a room that is not sharded costs nothing here).
type partRoutes struct {
	mu sync.Mutex
	m  map[string]partRoute
}

func (r *partRoutes) get(room string, now time.Time) (partRoute, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pr, ok := r.m[room]
	if !ok || now.After(pr.until) {
		return partRoute{}, false
	}
	return pr, true
}

func (r *partRoutes) put(room string, pr partRoute) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil || len(r.m) > 10000 {
		r.m = map[string]partRoute{}
	}
	r.m[room] = pr
}

func (r *partRoutes) forget(room string) {
	r.mu.Lock()
	delete(r.m, room)
	r.mu.Unlock()
}

// enterDirect enters user in room's part when this instance knows that
// the room's pre-queue is sharded and takes new users in its parts (the
// room said PART within partsTTL): one script on the part's shard, nothing
// on the room's. handled is false otherwise, or when the part says ROOM:
// the caller runs the room's enter, which decides (WAITING, READY,
// REJECT… as always, or PART for a user new to the room: partFromRoom).
func (q *Queue) enterDirect(ctx context.Context, room, user string) (Status, bool, error) {
	pr, ok := q.routes.get(room, time.Now())
	if !ok || !pr.direct {
		return Status{}, false, nil
	}
	st, err := q.enterPart(ctx, room, user, pr.parts)
	if errors.Is(err, errPartRefused) {
		return Status{}, false, nil
	}
	return st, true, err
}

// errPartRefused: the part said ROOM.
var errPartRefused = errors.New("queue: the part refused: the room decides")

// partEnterReply decodes one reply of the part's enter script (penter.lua):
// a PreQueue status with the part's own count as Waiting, or
// errPartRefused for ROOM.
func partEnterReply(v any) (Status, error) {
	r := asReply("penter", v)
	if r.str(0) != "PREQUEUE" {
		if r.err != nil {
			return Status{}, r.err
		}
		return Status{}, errPartRefused
	}
	st := Status{State: PreQueue, New: r.int(1) == 1, Waiting: r.int(2), Paused: r.int(5) == 1}
	if at := r.int(3); at > 0 {
		st.OpensAt = msTime(at)
		st.OpensIn = max(0, time.Duration(at-r.int(4))*time.Millisecond)
	}
	return st, r.err
}

// enterPart runs the part's enter script for user.
func (q *Queue) enterPart(ctx context.Context, room, user string, parts int) (Status, error) {
	pk := q.partKeys(room, PartOf(user, parts))
	v, err := q.batch.Run(ctx, partEnterScript, []string{pk.cfg, pk.prequeue, pk.state, pk.left}, user, parts).Result()
	if err != nil {
		return Status{}, unavailable("enter part", err)
	}
	st, err := partEnterReply(v)
	if err != nil {
		return Status{}, err
	}
	if st.New && st.Waiting == 1 {
		// The part's first arrival: make sure the room knows an opening
		// is to be merged (UpdateRoom armed it already, normally).
		if err := q.arm(ctx, room); err != nil {
			return Status{}, err
		}
	}
	// The part's answer counts the part alone; what the page shows is
	// the whole room's (a poll reads it exactly, Status).
	st.Waiting = max(st.Waiting*int64(parts), st.Waiting)
	return st, nil
}

// partFromRoom follows a room enter's PART answer v into the user's part.
// handled is false when v is not PART; errPartRefused when the part
// refused, and the caller enters the user in the room once more with the
// refusal (enter.lua ARGV[6]: the room's own pre-queue).
func (q *Queue) partFromRoom(ctx context.Context, room, user string, v any) (Status, bool, error) {
	r := asReply("enter", v)
	if r.err != nil || r.str(0) != "PART" {
		return Status{}, false, nil
	}
	parts := int(r.int(1))
	if r.err != nil || parts < 2 || parts > MaxPrequeueParts {
		return Status{}, true, fmt.Errorf("queue: enter: PART reply %v", v)
	}
	st, err := q.enterPart(ctx, room, user, parts)
	if err == nil {
		q.routes.put(room, partRoute{parts: parts, direct: r.int(2) == 0, until: time.Now().Add(partsTTL)})
		return st, true, nil
	}
	if !errors.Is(err, errPartRefused) {
		return Status{}, true, err
	}
	q.routes.forget(room)
	return Status{}, false, errPartRefused
}

// arm marks room as having a sharded opening to merge (arm.lua).
func (q *Queue) arm(ctx context.Context, room string) error {
	k := q.keys(room)
	if err := armScript.Run(ctx, q.rdb, []string{k.stats, q.mergeKey(room)}).Err(); err != nil {
		return unavailable("arm", err)
	}
	return nil
}

// errInParts is decodeStatus's answer to the status script's PARTS reply.
type errInParts struct {
	parts  int
	status Status // the room's figures, as a PREQUEUE status would have them
	idle   bool
}

func (e *errInParts) Error() string { return "queue: status: in a part of a sharded pre-queue" }

// decodeParts reads the status script's PARTS reply.
func decodeParts(r *reply) error {
	e := &errInParts{parts: int(r.int(1)), idle: r.int(9) == 1}
	e.status = Status{State: PreQueue, Sched: r.int(3), Paused: r.int(6) == 1, Message: r.str(7), Waiting: r.int(8)}
	if at := r.int(2); at > 0 {
		e.status.OpensAt = msTime(at)
		e.status.OpensIn = max(0, time.Duration(at-r.int(5))*time.Millisecond)
	}
	if r.int(4) == 1 {
		e.status.State = Closed
	}
	if r.err != nil {
		return r.err
	}
	return e
}

// partStatus completes a status read that the room answered with PARTS
// (partStatuses for one user).
func (q *Queue) partStatus(ctx context.Context, room, user string, e *errInParts) (Status, error) {
	sts, errs, err := q.partStatuses(ctx, room, []string{user}, []*errInParts{e})
	if err != nil {
		return Status{}, err
	}
	return sts[0], errs[0]
}

// partStatuses completes the status reads that the room answered with
// PARTS (es[i] for users[i]), in one pipeline for all of them: each
// user's part says whether they are pre-queued there, and waiting adds
// every part's size to the room's. A user found in no part is read from
// the room once more (one pipeline for those): the merge appends a slice
// to the room before it removes it from the parts, so a user who moved
// between the two reads is in the room now, never "not in queue".
func (q *Queue) partStatuses(ctx context.Context, room string, users []string, es []*errInParts) ([]Status, []error, error) {
	parts := MaxPrequeueParts
	for _, e := range es {
		parts = min(parts, max(e.parts, 1))
	}
	in := make([]*redis.FloatCmd, len(users))
	gone := make([]*redis.BoolCmd, len(users))
	sizes := make([]*redis.IntCmd, parts)
	_, err := q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range parts {
			sizes[i] = p.ZCard(ctx, q.partKeys(room, i).prequeue)
		}
		for i, u := range users {
			pk := q.partKeys(room, PartOf(u, max(es[i].parts, 1)))
			in[i] = p.ZScore(ctx, pk.prequeue, u)
			gone[i] = p.SIsMember(ctx, pk.left, u)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, unavailable("status part", err)
	}
	var inParts int64
	for _, s := range sizes {
		inParts += s.Val()
	}
	sts := make([]Status, len(users))
	errs := make([]error, len(users))
	var again []int
	for i := range users {
		if in[i].Err() == nil && !gone[i].Val() {
			sts[i] = es[i].status
			sts[i].Waiting += inParts
			continue
		}
		again = append(again, i)
	}
	if len(again) == 0 {
		return sts, errs, nil
	}
	// Not in the part: read the room again (the user's slice may have
	// moved between the two reads, and even been committed by the
	// merge's last step).
	k := q.keys(room)
	cmds := make([]*redis.Cmd, len(again))
	if err := q.pipelineScript(ctx, statusScript, func(p redis.Pipeliner) {
		for j, i := range again {
			cmds[j] = statusScript.EvalSha(ctx, p, q.statusKeys(k), users[i])
		}
	}); err != nil {
		return nil, nil, unavailable("status", err)
	}
	for j, i := range again {
		st, err := decodeStatus(cmds[j].Val())
		var e *errInParts
		switch {
		case errors.As(err, &e) && e.idle:
			errs[i] = ErrIdle
		case errors.As(err, &e):
			errs[i] = ErrNotInQueue
		default:
			sts[i], errs[i] = st, err
		}
	}
	return sts, errs, nil
}

// resolveParts completes the statuses (Statuses) that the room answered
// with PARTS.
func (q *Queue) resolveParts(ctx context.Context, room string, users []string, sts []Status, errs []error) {
	var idx []int
	var es []*errInParts
	for i, err := range errs {
		var e *errInParts
		if errors.As(err, &e) {
			idx = append(idx, i)
			es = append(es, e)
		}
	}
	if len(idx) == 0 {
		return
	}
	sub := make([]string, len(idx))
	for j, i := range idx {
		sub[j] = users[i]
	}
	got, gerrs, err := q.partStatuses(ctx, room, sub, es)
	for j, i := range idx {
		if err != nil {
			sts[i], errs[i] = Status{}, err
			continue
		}
		sts[i], errs[i] = got[j], gerrs[j]
	}
}

// leavePart removes a pre-queued user from their part (pleave.lua).
func (q *Queue) leavePart(ctx context.Context, room, user string, parts int) (bool, error) {
	pk := q.partKeys(room, PartOf(user, parts))
	n, err := partLeaveScript.Run(ctx, q.rdb, []string{pk.prequeue, pk.state, pk.left}, user).Int64()
	if err != nil {
		return false, unavailable("leave part", err)
	}
	return n == 1, nil
}

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
