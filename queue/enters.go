package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Enters puts each of users in room's queue (or reports where they already
// are), as Enter does for one, in one pipeline: one round trip for all of
// them, each user still one atomic enter script, run in the order given
// (so tickets follow that order for users who are new). It is the bulk
// form the load tool drives to find how many enters one Redis shard takes
// (docs/scale.md, the capacity model); the HTTP path enters one user per
// request and batches concurrent requests itself (package queue/batch).
//
// The slice of statuses and the slice of errors are both as long as users:
// errs[i] is ErrRoomClosed for a user the room refused, or
// a decoding error. The last error is for the whole call: ErrRoomNotFound
// (an invalid or missing room) or ErrUnavailable.
func (q *Queue) Enters(ctx context.Context, room string, users ...string) ([]Status, []error, error) {
	if !ValidRoom(room) {
		return nil, nil, ErrRoomNotFound
	}
	k := q.keys(room)
	ks := enterKeys(k)
	cmds := make([]*redis.Cmd, len(users))
	err := q.pipelineScript(ctx, enterScript, func(p redis.Pipeliner) {
		for i, u := range users {
			cmds[i] = enterScript.EvalSha(ctx, p, ks, u, newEntryToken(), k.channel, room, q.grace.Milliseconds(), "0")
		}
	})
	if err != nil {
		return nil, nil, unavailable("enters", err)
	}
	sts := make([]Status, len(users))
	errs := make([]error, len(users))
	var sharded []int // users the room sent to their part
	parts := 0
	for i, c := range cmds {
		if r := asReply("enter", c.Val()); r.str(0) == "PART" && r.err == nil {
			sharded, parts = append(sharded, i), int(r.int(1))
			continue
		}
		sts[i], errs[i] = enterReply(c.Val())
		if errors.Is(errs[i], ErrRoomNotFound) {
			return nil, nil, fmt.Errorf("queue: enters: %w", ErrRoomNotFound)
		}
	}
	if len(sharded) > 0 {
		if err := q.entersParts(ctx, room, users, sharded, parts, sts, errs); err != nil {
			return nil, nil, err
		}
	}
	return sts, errs, nil
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
