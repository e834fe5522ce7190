package queue

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/internal/batch"
)

// Sentinel errors. The HTTP layer maps each to one status in one table.
var (
	// ErrRoomNotFound: the room does not exist (or its name is invalid).
	ErrRoomNotFound = errors.New("room not found")
	// ErrRoomClosed: the room's method is reject (sold out or closed): new
	// entries are refused; those already waiting keep their place. It is
	// the one state that refuses arrivals: a paused room takes them into
	// the line (Status.Paused).
	ErrRoomClosed = errors.New("room closed")
	// ErrNotInQueue: neither waiting nor holding a live entry token.
	ErrNotInQueue = errors.New("not in queue")
	// ErrIdle is ErrNotInQueue (errors.Is holds for both) for a user the
	// admission run dropped as idle — neither polling nor holding a stream
	// for the idle timeout — who has not entered again since.
	ErrIdle = fmt.Errorf("%w: dropped as idle", ErrNotInQueue)
	// ErrEntryTokenInvalid: the entry token is unknown, spent, expired or
	// belongs to another user.
	ErrEntryTokenInvalid = errors.New("entry token invalid")
	// ErrUnavailable wraps every failure to reach Redis: the caller answers
	// 503 and the client retries; nothing already accepted is lost.
	ErrUnavailable = errors.New("queue unavailable")
)

// State is where a user stands in a room.
type State int

// States of a user in a room.
const (
	NotInQueue State = iota
	Waiting
	Ready
	// PreQueue: arrived before a scheduled opening; no ticket yet.
	PreQueue
	// Closed: waiting (or pre-queued) in a room whose method is reject. The
	// place is kept; nobody is admitted until the method changes.
	Closed
)

func (s State) String() string {
	switch s {
	case Waiting:
		return "WAITING"
	case Ready:
		return "READY"
	case PreQueue:
		return "PREQUEUE"
	case Closed:
		return "CLOSED"
	}
	return "NOT_IN_QUEUE"
}

// Status is a user's standing in a room as read from Redis.
type Status struct {
	State State
	// Ticket is the user's ticket number (Waiting, and Closed in the
	// queue); 0 in the pre-queue, where no ticket is given yet.
	Ticket int64
	// Position is 1-based (Waiting and Closed; PreQueue with method fifo,
	// where it is the arrival-order place; 0 when not decided yet).
	Position int64
	// Waiting is the number of people waiting in the room (Waiting,
	// Closed; with PreQueue it counts the queue and the pre-queue).
	Waiting int64
	// Rate is the measured admission rate in users per second; 0 until the
	// room has measured one (Waiting only). The ETA is not estimated from
	// it alone: see package queue/estimate.
	Rate float64
	// Target is the room's targetActive (Waiting only).
	Target int64
	// EntryToken and EntryExpires are set when Ready.
	EntryToken   string
	EntryExpires time.Time
	// New is true when Enter gave the user a new ticket, a new pre-queue
	// place, or (passthrough) a new admission.
	New bool
	// OpensAt is the room's scheduled opening (PreQueue; zero when none
	// is set, e.g. it was cleared and the opening run is due).
	OpensAt time.Time
	// OpensIn is the time left until OpensAt by Redis's clock (PreQueue).
	OpensIn time.Duration
	// Sched is the room's schedule number when read (PreQueue and Closed
	// without a ticket): a pushed stream re-reads the status when it grows.
	Sched int64
	// Paused: the room is paused (Waiting, PreQueue, Closed): nobody is
	// admitted, the place is kept, and arrivals still join the line.
	Paused bool
	// Message is the operator's message to the room's waiting users
	// (Waiting, PreQueue, Closed; "" when none).
	Message string
}

// Options configure a Queue.
type Options struct {
	// Prefix starts every key; DefaultPrefix when empty. Tests use a unique
	// prefix each, so they share one Redis without seeing each other.
	Prefix string
	// RateWindow is how much busy time admissions are measured over
	// before the rate is updated (default 5s).
	RateWindow time.Duration
	// IdleTimeout: a waiting user neither polling nor holding a stream for
	// this long has abandoned the queue and is removed by the admission
	// run. 0 keeps everyone. The drop is remembered for idleMemory (Status
	// then says ErrIdle) unless the user enters again.
	IdleTimeout time.Duration
	// Grace turns presence-aware admission on (0: off): the admission run
	// passes over a waiting user whose expected return (the seen score:
	// the last poll or stream plus that poll's grace, see Touch) has
	// passed. Grace is how long a user who just entered, entered again (a
	// reload) or moved out of the pre-queue is expected back by.
	Grace time.Duration
	// Batch, when set, runs the enter and status scripts; it must be a
	// Runner on rdb. Share one with the instance's other callers of
	// scripts (its rate limiter) and their scripts share round trips too.
	// Nil: a Runner of the queue's own.
	Batch *batch.Runner
	// EnterGuard is the Lua of the decisions EnterGuarded takes inside
	// the enter script, before entering (Guard): the instance's rate
	// limits, ratelimit.InlineLua. "": EnterGuarded is refused.
	EnterGuard string
}

// idleMemory is how long a drop for idleness is remembered: a day, longer
// than the default queue token (6 h), so a page that comes back with its
// token hears why its place is gone.
const idleMemory = 24 * time.Hour

// Queue is the Redis model of all rooms. It is safe for concurrent use.
type Queue struct {
	rdb         redis.UniversalClient
	prefix      string
	rateWindow  time.Duration
	idle        time.Duration
	grace       time.Duration // Options.Grace
	batch       *batch.Runner // enter and status scripts of concurrent callers
	guarded     *redis.Script // the enter script behind Options.EnterGuard (nil: none)
	openSlice   int           // users per run of the open script (openSlice; tests set less)
	openRuns    int           // runs per Open call (openRunsPerCall)
	dbTag       string        // the event channels' suffix (channelTag)
	routes      partRoutes    // rooms whose pre-queue is sharded, as last heard (prequeue_parts.go)
	interleaves interleaves   // the interleaving of each room's sharded opening (prequeue_merge.go)
}

// New returns a Queue on rdb. rdb may be a single node, Sentinel or Cluster
// client: every script touches the keys of one room, which share one slot.
func New(rdb redis.UniversalClient, o Options) *Queue {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.RateWindow <= 0 {
		o.RateWindow = 5 * time.Second
	}
	if o.Batch == nil {
		o.Batch = batch.New(rdb)
	}
	return &Queue{rdb: rdb, prefix: o.Prefix, rateWindow: o.RateWindow, idle: o.IdleTimeout, grace: o.Grace, batch: o.Batch, guarded: guardedEnter(o.EnterGuard), openSlice: openSlice, openRuns: openRunsPerCall, dbTag: channelTag(rdb)}
}

// unavailable marks err as a failure to reach Redis.
func unavailable(op string, err error) error {
	return fmt.Errorf("queue: %s: %w: %w", op, ErrUnavailable, err)
}

func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// Enter puts user in room's queue, or returns where they already are.
// Re-entering keeps the first ticket; a user holding a live entry token gets
// Ready. A paused room takes a new user into the line as a running room
// does (Waiting, Paused): admission holds, the place does not. Errors:
// ErrRoomNotFound, ErrRoomClosed, ErrUnavailable.
//
// In a room whose pre-queue is sharded (prequeueParts > 1), a user new
// to the room before its opening enters their part (prequeue_parts.go):
// straight away while this instance knows the room does that, else after
// the room's enter said so.
func (q *Queue) Enter(ctx context.Context, room, user string) (Status, error) {
	if ValidRoom(room) {
		if st, ok, err := q.enterDirect(ctx, room, user); ok {
			return st, err
		}
	}
	st, _, err := q.enter(ctx, enterScript, room, user, nil)
	return st, err
}

// enter runs script — the enter script, or it behind a guard
// (EnterGuarded) — for user in room, with the guard's keys and arguments
// after the enter's own. refused is the guard's refusal (nil: none).
func (q *Queue) enter(ctx context.Context, script *redis.Script, room, user string, guardKeys []string, guardArgs ...any) (st Status, refused []any, err error) {
	if !ValidRoom(room) {
		return Status{}, nil, ErrRoomNotFound
	}
	k := q.keys(room)
	keys := enterKeys(k, guardKeys...)
	args := append(make([]any, 0, enterArgCount+len(guardArgs)), user, newEntryToken(), k.channel, room, q.grace.Milliseconds(), "0")
	args = append(args, guardArgs...)
	for try := 0; ; try++ {
		v, err := q.batch.Run(ctx, script, keys, args...).Result()
		if err != nil {
			return Status{}, nil, unavailable("enter", err)
		}
		if script == q.guarded {
			if refused, err := guardRefusal(v); refused != nil || err != nil {
				return Status{}, refused, err
			}
		}
		st, handled, err := q.partFromRoom(ctx, room, user, v)
		if errors.Is(err, errPartRefused) && try == 0 {
			// The part refused (past the opening by its clock, sealed):
			// the room's own pre-queue takes the user (enter.lua ARGV[6]).
			args[enterArgCount-1] = "1"
			continue
		}
		if handled || err != nil {
			return st, nil, err
		}
		st, err = enterReply(v)
		return st, nil, err
	}
}

// enterKeys are the enter script's keys, followed by extra (a guard's).
func enterKeys(k keys, extra ...string) []string {
	ks := make([]string, 0, enterKeyCount+len(extra))
	ks = append(ks, k.cfg, k.seq, k.queue, k.active, k.tokens, k.stats, k.seen, k.prequeue, k.idle, k.back)
	return append(ks, extra...)
}

// enterReply decodes one reply of the enter script.
func enterReply(v any) (Status, error) {
	switch asReply("enter", v).str(0) {
	case "NOROOM":
		return Status{}, ErrRoomNotFound
	case "REJECT":
		return Status{}, ErrRoomClosed
	}
	return decodeStatus(v)
}

// Status reads user's standing in room. A user admitted between two reads
// sees Ready, never NotInQueue: admission pops and issues the token in one
// script. Errors: ErrNotInQueue (ErrIdle when dropped as idle),
// ErrUnavailable.
func (q *Queue) Status(ctx context.Context, room, user string) (Status, error) {
	if !ValidRoom(room) {
		return Status{}, ErrNotInQueue
	}
	k := q.keys(room)
	v, err := q.batch.Run(ctx, statusScript, q.statusKeys(k), user).Result()
	if err != nil {
		return Status{}, unavailable("status", err)
	}
	st, err := decodeStatus(v)
	if e, ok := err.(*errInParts); ok {
		return q.partStatus(ctx, room, user, e)
	}
	return st, err
}

func (q *Queue) statusKeys(k keys) []string {
	return []string{k.queue, k.active, k.tokens, k.stats, k.cfg, k.prequeue, k.idle}
}

// decodeStatus reads a status or enter script reply (the same shapes).
func decodeStatus(v any) (Status, error) {
	r := asReply("status", v)
	var st Status
	switch tag := r.str(0); tag {
	case "NONE":
		if r.err == nil && len(r.v) > 1 && r.str(1) == "idle" {
			return Status{}, ErrIdle
		}
		if r.err == nil {
			return Status{}, ErrNotInQueue
		}
	case "PARTS":
		return Status{}, decodeParts(r)
	case "READY":
		st = Status{State: Ready, EntryToken: r.str(1), EntryExpires: msTime(r.int(2)), New: r.optInt(3) == 1}
	case "WAITING":
		st = Status{State: Waiting, Ticket: r.int(1), Position: r.int(2), Waiting: r.int(3), Rate: r.float(4), Target: r.int(5),
			New: r.int(7) == 1, Paused: r.int(8) == 1, Message: r.str(9)}
		if r.int(6) == 1 {
			st.State = Closed
		}
	case "PREQUEUE":
		st = Status{State: PreQueue, Position: r.int(1), Waiting: r.int(2), Sched: r.int(4), New: r.int(6) == 1,
			Paused: r.int(8) == 1, Message: r.str(9)}
		if at := r.int(3); at > 0 {
			st.OpensAt = msTime(at)
			st.OpensIn = max(0, time.Duration(at-r.int(7))*time.Millisecond)
		}
		if r.int(5) == 1 {
			st.State = Closed
		}
	default:
		r.fail(0, "a known tag")
	}
	return st, r.err
}

// LeaveResult says what Leave removed.
type LeaveResult struct {
	WasWaiting bool
	Ticket     int64
	SlotFreed  bool
	// Idle: there was nothing to give up because the admission run had
	// dropped the user as idle (see ErrIdle).
	Idle bool
}

// Leave removes user from room's queue, or gives up their entry window. An
// order already in flight keeps its slot until it finishes; a gateway
// session (ConsumeSession) ends and frees its slot.
func (q *Queue) Leave(ctx context.Context, room, user string) (LeaveResult, error) {
	if !ValidRoom(room) {
		return LeaveResult{}, nil
	}
	k := q.keys(room)
	v, err := leaveScript.Run(ctx, q.rdb, []string{k.queue, k.active, k.tokens, k.stats, k.gone, k.seen, k.prequeue, k.idle,
		q.sessionKey(room, user), k.cfg, k.back}, user, k.channel, room).Result()
	if err != nil {
		return LeaveResult{}, unavailable("leave", err)
	}
	r := asReply("leave", v)
	res := LeaveResult{WasWaiting: r.int(0) == 1, Ticket: r.int(1), SlotFreed: r.int(2) == 1, Idle: r.int(3) == 1}
	if parts := int(r.int(4)); r.err == nil && !res.WasWaiting && !res.SlotFreed && parts > 1 {
		// Perhaps pre-queued in a part of a sharded pre-queue.
		left, err := q.leavePart(ctx, room, user, min(parts, MaxPrequeueParts))
		if err != nil {
			return LeaveResult{}, err
		}
		if left {
			res = LeaveResult{WasWaiting: true}
		}
	}
	return res, r.err
}

// Claim is a consumed entry token: proof that its user may place one order,
// and what Restore needs to give the token back.
type Claim struct {
	Room, User, Token string
	// Deadline is the end of the entry window the token had.
	Deadline time.Time
	// Session is the gateway session the token opened (ConsumeSession), ""
	// for none. Hold keeps only the user's current session.
	Session string
}

// Consume validates and spends user's entry token in room (compare-then-
// delete in one script). The user's slot stays active for inFlight, the
// longest an order may take; Release ends it sooner. Errors:
// ErrEntryTokenInvalid, ErrUnavailable.
func (q *Queue) Consume(ctx context.Context, room, user, token string, inFlight time.Duration) (Claim, error) {
	return q.consume(ctx, room, user, token, "", "", inFlight)
}

// ConsumeSession is Consume for a gateway session (pass mode "session"):
// the spent token opens session id, held for idle (then by Hold), bound to
// the client network when network is not "". It replaces any earlier
// session of the user: only the current one holds. Errors: as Consume's.
func (q *Queue) ConsumeSession(ctx context.Context, room, user, token, id, network string, idle time.Duration) (Claim, error) {
	if id == "" {
		return Claim{}, ErrEntryTokenInvalid
	}
	return q.consume(ctx, room, user, token, id, network, idle)
}

func (q *Queue) consume(ctx context.Context, room, user, token, session, network string, inFlight time.Duration) (Claim, error) {
	if !ValidRoom(room) || token == "" {
		return Claim{}, ErrEntryTokenInvalid
	}
	k := q.keys(room)
	v, err := consumeScript.Run(ctx, q.rdb, []string{k.active, k.tokens, q.sessionKey(room, user)},
		user, token, inFlight.Milliseconds(), session, network).Result()
	if err != nil {
		return Claim{}, unavailable("consume", err)
	}
	r := asReply("consume", v)
	if r.int(0) != 1 {
		if r.err != nil {
			return Claim{}, r.err
		}
		return Claim{}, ErrEntryTokenInvalid
	}
	c := Claim{Room: room, User: user, Token: token, Deadline: msTime(r.int(1)), Session: session}
	return c, r.err
}

// sessionKey is the hash of user's gateway session in room (hold.lua): it
// expires with the session's slot.
func (q *Queue) sessionKey(room, user string) string { return q.RoomKey(room, "session:"+user) }

// restoresKey counts the restores of one entry token (restore.lua); it
// expires with the token's entry window.
func (q *Queue) restoresKey(room, token string) string { return q.RoomKey(room, "restores:"+token) }

// Release frees the active slot of a finished order (committed, or failed
// for a business reason such as out of stock). It returns whether a slot was
// freed; a user admitted again meanwhile keeps their new admission.
func (q *Queue) Release(ctx context.Context, c Claim) (bool, error) {
	k := q.keys(c.Room)
	var deadline int64
	if !c.Deadline.IsZero() {
		deadline = c.Deadline.UnixMilli()
	}
	n, err := releaseScript.Run(ctx, q.rdb, []string{k.active, k.tokens, k.stats, k.cfg}, c.User, "order", deadline).Int64()
	if err != nil {
		return false, unavailable("release", err)
	}
	return n == 1, nil
}

// Restore gives a consumed token back after an infrastructure failure, so
// the user can retry the same order. The entry window is extended to at
// least now + grace. It returns false when the slot is already gone.
func (q *Queue) Restore(ctx context.Context, c Claim, grace time.Duration) (bool, error) {
	n, err := q.restore(ctx, c, max(grace, time.Millisecond), 0)
	return n == 1, err
}

// ErrRestoresSpent: RestoreAtMost refused, the token's entry window is
// over or its restores are used up. The slot stays taken until released.
var ErrRestoresSpent = errors.New("entry token restores spent")

// RestoreAtMost gives a consumed token back like Restore, but at most most
// times per token (counted in Redis, atomically with the restore) and
// never past the entry window the token had: a retried request cannot
// stretch an admission. It returns false when the slot is already gone;
// ErrRestoresSpent when the window is over or the restores are spent (the
// caller then releases the slot), or ErrUnavailable.
func (q *Queue) RestoreAtMost(ctx context.Context, c Claim, most int) (bool, error) {
	n, err := q.restore(ctx, c, 0, max(most, 0))
	if err == nil && n < 0 {
		return false, ErrRestoresSpent
	}
	return n == 1, err
}

func (q *Queue) restore(ctx context.Context, c Claim, grace time.Duration, most int) (int64, error) {
	if !ValidRoom(c.Room) {
		return 0, nil
	}
	k := q.keys(c.Room)
	n, err := restoreScript.Run(ctx, q.rdb, []string{k.active, k.tokens, q.restoresKey(c.Room, c.Token)},
		c.User, c.Token, c.Deadline.UnixMilli(), grace.Milliseconds(), most).Int64()
	if err != nil {
		return 0, unavailable("restore", err)
	}
	return n, nil
}

// SessionUse is what one request of a gateway session asks of Hold beyond
// the slot: its client network and the session's rate.
type SessionUse struct {
	// Network is the request's client network; a session bound to another
	// one is refused (Held.Elsewhere). "": not checked.
	Network string
	// Rate is the session's requests a second, Burst how many it may make
	// at once after a quiet spell (GCRA, kept with the session in Redis, so
	// the rate holds across instances). Rate 0: no limit.
	Rate  float64
	Burst int
}

// Held is the outcome of Hold.
type Held struct {
	// OK: the session holds its slot until Deadline (extended by this
	// request unless Limited or Elsewhere).
	OK       bool
	Deadline time.Time
	// Limited: this request is over the session's rate; the next may come
	// after RetryAfter.
	Limited    bool
	RetryAfter time.Duration
	// Elsewhere: the request comes from another network than the
	// session's.
	Elsewhere bool
}

// Hold keeps the active slot of c's session (ConsumeSession) for idle more
// from now, but never past end, and paces it by u. Held.OK is false when
// the session no longer holds a slot (pruned, left, expired, replaced by a
// newer session or admitted again): the visitor then needs a new place in
// the queue.
func (q *Queue) Hold(ctx context.Context, c Claim, idle time.Duration, end time.Time, u SessionUse) (Held, error) {
	if !ValidRoom(c.Room) || c.Session == "" {
		return Held{}, nil
	}
	var interval int64
	if u.Rate > 0 {
		interval = max(int64(math.Round(1000/u.Rate)), 1)
	}
	k := q.keys(c.Room)
	v, err := holdScript.Run(ctx, q.rdb, []string{k.active, k.tokens, q.sessionKey(c.Room, c.User)},
		c.User, idle.Milliseconds(), end.UnixMilli(), c.Session, u.Network, interval, max(u.Burst, 1)).Result()
	if err != nil {
		return Held{}, unavailable("hold", err)
	}
	r := asReply("hold", v)
	switch r.int(0) {
	case 1:
		return Held{OK: true, Deadline: msTime(r.int(1))}, r.err
	case 2:
		return Held{OK: true, Limited: true, RetryAfter: time.Duration(r.int(1)) * time.Millisecond}, r.err
	case 3:
		return Held{OK: true, Elsewhere: true}, r.err
	}
	return Held{}, r.err
}

// AdmitResult is the outcome of one admission run for one room.
type AdmitResult struct {
	Room      string
	Admitted  []string // users admitted, in ticket order
	Waiting   int64    // waiting after the run
	Active    int64    // active after the run
	Want      int      // tokens this run could have used
	Pruned    int      // expired admissions removed
	Abandoned int      // waiting users removed for not being seen
	// Passed is how many absent users still wait ahead of the last one
	// this run admitted (presence-aware admission, Options.Grace).
	Passed int
	// PassedFirst is how many of them this run passed over for the first
	// time: summed over the runs, each absent user passed over once.
	PassedFirst int
	// Looked is how many waiting users this run looked at for presence:
	// at most the users it could admit plus 10,000 (admit.lua, LOOK).
	Looked int
	Rate   float64 // measured admission rate, users/s (0: not yet measured)
	Target int64
	Paused bool
	// Due: the room's opening time has come and its pre-queue waits to be
	// opened (Open); this run admitted nobody.
	Due bool
	// PreQueue is how many wait in the pre-queue for the opening at
	// OpensAt (zero: no opening scheduled): the room's own; the parts of
	// a sharded pre-queue are not counted (Merge says they may hold some).
	PreQueue int64
	// Merge is the state of the room's sharded opening (prequeue_merge.go):
	// MergeArmed (an opening to merge at OpensAt; Due once it has come),
	// MergeMoving (the merge is under way: run Merge each tick; admission
	// runs meanwhile), or 0.
	Merge   int
	OpensAt time.Time
	// Adaptive: the room's mode is adaptive (admission.Gate bounds
	// its runs).
	Adaptive bool
	// NextDeadline is the earliest end of an admission's window (zero:
	// nobody active): the next time a run has something to prune.
	NextDeadline time.Time
}

// Busy reports whether the room still has work after the run: someone
// waiting, pre-queued or admitted.
func (r AdmitResult) Busy() bool {
	return r.Waiting > 0 || r.PreQueue > 0 || r.Active > 0 || r.Merge > 0
}

// States of a sharded opening's merge (AdmitResult.Merge).
const (
	MergeArmed  = 1
	MergeMoving = 2
)

// newEntryToken returns 128 random bits, base64url-encoded.
func newEntryToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Admit runs one admission step for room with up to tokens fresh entry
// tokens. Any number of callers may run it at once. Errors: ErrRoomNotFound,
// ErrUnavailable.
func (q *Queue) Admit(ctx context.Context, room string, tokens int) (AdmitResult, error) {
	k := q.keys(room)
	presence := 0
	if q.grace > 0 {
		presence = 1
	}
	args := make([]any, 0, 6+tokens)
	args = append(args, k.channel, room, q.rateWindow.Milliseconds(), q.idle.Milliseconds(), idleMemory.Milliseconds(), presence)
	for range tokens {
		args = append(args, newEntryToken())
	}
	v, err := admitScript.Run(ctx, q.rdb, []string{k.cfg, k.queue, k.active, k.tokens, k.stats, k.gone, k.seen, k.prequeue, k.idle, k.back}, args...).Result()
	if err != nil {
		return AdmitResult{}, unavailable("admit", err)
	}
	r := asReply("admit", v)
	n := r.int(0)
	if n < 0 && r.err == nil {
		return AdmitResult{}, ErrRoomNotFound
	}
	res := AdmitResult{
		Room:        room,
		Admitted:    r.strs(8),
		Waiting:     r.int(1),
		Active:      r.int(2),
		Want:        int(r.int(3)),
		Pruned:      int(r.int(4)),
		Rate:        r.float(5),
		Target:      r.int(6),
		Paused:      r.int(7) == 1,
		Abandoned:   int(r.int(9)),
		Due:         r.int(10) == 1,
		PreQueue:    r.int(11),
		Passed:      int(r.int(14)),
		PassedFirst: int(r.int(15)),
		Merge:       int(r.optInt(16)),
		Adaptive:    r.optInt(17) == 1,
		Looked:      int(r.int(18)),
	}
	if at := r.int(12); at > 0 {
		res.NextDeadline = msTime(at)
	}
	if at := r.int(13); at > 0 {
		res.OpensAt = msTime(at)
	}
	return res, r.err
}

// Grant admits user at once, outside the queue's order and capacity: the
// operator bypass for staff testing a live sale. The caller audits it. A
// user already holding a live entry token keeps it. Errors:
// ErrRoomNotFound, ErrUnavailable.
func (q *Queue) Grant(ctx context.Context, room, user string) (Status, error) {
	if !ValidRoom(room) {
		return Status{}, ErrRoomNotFound
	}
	k := q.keys(room)
	v, err := grantScript.Run(ctx, q.rdb, []string{k.queue, k.active, k.tokens, k.cfg, k.prequeue, k.idle, k.stats, k.gone, k.seen, k.back},
		user, newEntryToken(), k.channel, room).Result()
	if err != nil {
		return Status{}, unavailable("grant", err)
	}
	r := asReply("grant", v)
	if r.str(0) == "NOROOM" && r.err == nil {
		return Status{}, ErrRoomNotFound
	}
	st := Status{State: Ready, EntryToken: r.str(1), EntryExpires: msTime(r.int(2))}
	return st, r.err
}

// Touch marks waiting users of room as present (they polled or hold a
// stream): each is expected back within grace, so admission neither passes
// them over nor removes them as idle before then. One script call per 500
// users, all in one pipeline. Users no longer waiting are ignored; a
// user's expected return only moves later (a shorter grace never cuts a
// longer one another instance told).
func (q *Queue) Touch(ctx context.Context, room string, users []string, grace time.Duration) error {
	if len(users) == 0 || !ValidRoom(room) {
		return nil
	}
	k := q.keys(room)
	err := q.pipelineScript(ctx, touchScript, func(p redis.Pipeliner) {
		for i := 0; i < len(users); i += 500 {
			batch := users[i:min(i+500, len(users))]
			args := make([]any, 1, len(batch)+1)
			args[0] = grace.Milliseconds()
			for _, u := range batch {
				args = append(args, u)
			}
			touchScript.EvalSha(ctx, p, []string{k.seen, k.queue, k.stats, k.back}, args...)
		}
	})
	if err != nil {
		return unavailable("touch", err)
	}
	return nil
}
