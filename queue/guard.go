package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// ErrNoGuard: EnterGuarded on a Queue built without Options.EnterGuard.
var ErrNoGuard = errors.New("queue: no enter guard configured")

// A Guard is another package's decision taken inside the enter script,
// before it enters, in the same script call: the rate limiter's enter
// limits (ratelimit.Inline), so that an enter costs one script in the
// instance's batch and on Redis instead of two.
//
// Its Lua, given once (Options.EnterGuard), must define
//
//	local function guard(k0, a0, fresh)
//
// reading its keys from KEYS[k0] and its arguments from ARGV[a0] on (they
// follow the enter script's own: k0 and a0 come from enterKeyCount and
// enterArgCount), told whether the user holds no place yet (fresh: a
// waiting, pre-queued or admitted user re-entering is not), and returning
// nil to let the enter go on, or a table to reply instead of entering —
// the refusal, which the Guard of the call reads (Refusal). What the guard
// writes stays written whatever the enter then answers (a request counted
// by a limit stays counted when the room turns out to be paused).
//
// Only on one Redis (single node or Sentinel): the guard's keys are not in
// the room's hash slot, so on a Cluster the caller decides first, in a
// script of its own, and then calls Enter.
type Guard interface {
	// Keys and Args are this call's, appended to the enter script's own.
	Keys() []string
	Args() []any
	// Refusal reads the table the guard's Lua returned as the error
	// EnterGuarded returns.
	Refusal(reply []any) error
}

// The enter script's own keys and arguments (enterKeys, Queue.enter): a
// guard's come after them.
const (
	enterKeyCount = 10
	enterArgCount = 6
)

// The enter script calls before_enter(fresh) before anything else: the
// guard's glue, or nothing.
var (
	guardCall = fmt.Sprintf(`
local function before_enter(fresh)
  return guard(%d, %d, fresh)
end
`, enterKeyCount+1, enterArgCount+1)
	noGuard = `
local function before_enter()
  return nil
end
`
)

// guardedEnter composes the enter script behind guardLua ("" when none).
func guardedEnter(guardLua string) *redis.Script {
	if guardLua == "" {
		return nil
	}
	return redis.NewScript(guardLua + "\n" + guardCall + scriptSource("enter"))
}

// EnterGuarded is Enter preceded by g's decision (Options.EnterGuard on
// g's keys and arguments), in one script call. When the guard refuses,
// nobody entered and the error is g's reading of the refusal; else the
// answer is Enter's.
func (q *Queue) EnterGuarded(ctx context.Context, room, user string, g Guard) (Status, error) {
	if q.guarded == nil {
		return Status{}, ErrNoGuard
	}
	st, refused, err := q.enter(ctx, q.guarded, room, user, g.Keys(), g.Args()...)
	if refused != nil {
		return Status{}, g.Refusal(refused)
	}
	return st, err
}

// guardRefusal is the guard's refusal in a reply of the guarded enter
// script, nil when the reply is the enter's.
func guardRefusal(v any) ([]any, error) {
	r := asReply("enter", v)
	if r.str(0) != "GUARD" {
		return nil, nil
	}
	if len(r.v) == 2 {
		if refused, ok := r.v[1].([]any); ok {
			return refused, nil
		}
	}
	return nil, fmt.Errorf("queue: enter: guard reply %v", v)
}
