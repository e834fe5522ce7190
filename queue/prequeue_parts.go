package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A user in a part of a sharded pre-queue (prequeue.go): the enter, the
// bulk enter, the status and the leave of a user pre-queued in a part,
// and what an instance remembers of the rooms whose pre-queue is sharded.

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

// EntersParts is Enters straight into the parts of room's sharded
// pre-queue (parts of them, prequeueParts): each user's part enter
// script, in one pipeline that a Redis Cluster client sends to every
// master at once, and nothing on the room's shard. It is the bulk form
// the load tool drives (loadtest ceiling --parts); a user a part refuses
// (no copy of the room's schedule, the opening has come) is entered as
// Enter would.
func (q *Queue) EntersParts(ctx context.Context, room string, parts int, users ...string) ([]Status, []error, error) {
	if !ValidRoom(room) {
		return nil, nil, ErrRoomNotFound
	}
	all := make([]int, len(users))
	for i := range all {
		all[i] = i
	}
	sts := make([]Status, len(users))
	errs := make([]error, len(users))
	if err := q.entersParts(ctx, room, users, all, min(max(parts, 1), MaxPrequeueParts), sts, errs); err != nil {
		return nil, nil, err
	}
	return sts, errs, nil
}

// entersParts enters users[i] for i in which into their parts (of parts),
// in one pipeline, filling sts and errs; those a part refuses enter the
// room, as Enter does.
func (q *Queue) entersParts(ctx context.Context, room string, users []string, which []int, parts int, sts []Status, errs []error) error {
	cmds := make([]*redis.Cmd, len(which))
	err := q.pipelineScript(ctx, partEnterScript, func(p redis.Pipeliner) {
		for j, i := range which {
			pk := q.partKeys(room, PartOf(users[i], parts))
			cmds[j] = partEnterScript.EvalSha(ctx, p, []string{pk.cfg, pk.prequeue, pk.state, pk.left}, users[i], parts)
		}
	})
	if err != nil {
		return unavailable("enters parts", err)
	}
	for j, i := range which {
		st, err := partEnterReply(cmds[j].Val())
		if errors.Is(err, errPartRefused) {
			sts[i], errs[i] = q.Enter(ctx, room, users[i])
			continue
		}
		sts[i], errs[i] = st, err
	}
	return nil
}
