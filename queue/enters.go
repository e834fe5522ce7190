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
// request and batches concurrent requests itself (package internal/batch).
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
