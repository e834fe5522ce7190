package queue

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Method is how a room orders and admits its users.
type Method string

// Queueing methods.
const (
	// MethodFIFO admits in arrival order (the default).
	MethodFIFO Method = "fifo"
	// MethodRandom shuffles those who arrived before a scheduled opening
	// with a recorded seed at the opening; later arrivals queue FIFO
	// behind them.
	MethodRandom Method = "random"
	// MethodPassthrough admits everyone at once, outside targetActive: for
	// quiet periods, when the downstream needs no queue.
	MethodPassthrough Method = "passthrough"
	// MethodReject refuses new entries (sold out or closed); users already
	// waiting keep their place and see CLOSED; nobody is admitted.
	MethodReject Method = "reject"
)

// ParseMethod returns the method named s; ok is false for unknown names.
func ParseMethod(s string) (m Method, ok bool) {
	switch m = Method(s); m {
	case MethodFIFO, MethodRandom, MethodPassthrough, MethodReject:
		return m, true
	}
	return "", false
}

// NewShuffleSeed returns 128 random bits, hex-encoded: the seed of one
// opening's shuffle. It is drawn at the opening, never before, so nobody
// can compute the order in advance; it is recorded afterwards for audit.
func NewShuffleSeed() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Shuffle reproduces a random opening's order of the users it shuffled
// (those who arrived before the opening time, in any order): sorted by the
// first 48 bits of sha1(seed:user), ties by user id, as scripts/open.lua
// places them. Anyone holding the recorded seed and the list of users can
// check an opening's result; nobody can compute it before the opening,
// because the seed is drawn then.
func Shuffle(seed string, users []string) []string {
	type placed struct {
		key  uint64
		user string
	}
	p := make([]placed, len(users))
	for i, u := range users {
		h := sha1.Sum([]byte(seed + ":" + u))
		var b [8]byte
		copy(b[2:], h[:6])
		p[i] = placed{binary.BigEndian.Uint64(b[:]), u}
	}
	slices.SortFunc(p, func(a, b placed) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		return strings.Compare(a.user, b.user)
	})
	out := make([]string, len(p))
	for i := range p {
		out[i] = p[i].user
	}
	return out
}

// OpenResult is the outcome of one Open call.
type OpenResult struct {
	Room string
	// Moved is how many pre-queue users got a ticket in the opening this
	// call finished; 0 when it did not finish one (not yet time, another
	// instance finished it, or more slices remain: Done false).
	Moved int
	// Shuffled is how many of them were shuffled (method random: those who
	// arrived before the opening time); Seed is the seed used ("" unless
	// random).
	Shuffled int
	Seed     string
	Waiting  int64 // queue length after the opening
	// Done is false when the call stopped with part of the pre-queue still
	// to move (call again).
	Done bool
}

// openSlice is the most users one run of the open script shuffles or
// moves: 10 to 40 ms of Redis time on the benchmark machine, so other
// requests interleave with an opening of any size. openRunsPerCall bounds
// the runs of one Open call, so an instance's admission tick also serves
// its other rooms while a large opening is under way.
const (
	openSlice       = 1000
	openRunsPerCall = 16
)

// Open turns room's pre-queue into its queue once its opening time has
// come (Redis clock): shuffled with seed when the method is random (the
// first run of an opening records its seed; later runs use it), in arrival
// order otherwise, each user getting a fresh ticket. The script works in
// slices of openSlice users; Open runs up to openRunsPerCall of them and
// reports Done false when more remain. It is safe to run from many
// instances at once: they share the slices, and only the run that empties
// the pre-queue reports the opening (Moved, Seed) and publishes its event.
// Errors: ErrRoomNotFound, ErrUnavailable.
func (q *Queue) Open(ctx context.Context, room, seed string) (OpenResult, error) {
	if !ValidRoom(room) {
		return OpenResult{}, ErrRoomNotFound
	}
	k := q.keys(room)
	keys := []string{k.cfg, k.seq, k.queue, k.prequeue, k.stats, k.seen}
	for range q.openRuns {
		v, err := openScript.Run(ctx, q.rdb, keys, k.channel, room, seed, q.openSlice, q.grace.Milliseconds()).Result()
		if err != nil {
			return OpenResult{}, unavailable("open", err)
		}
		r := asReply("open", v)
		n := r.int(0)
		if n < 0 && r.err == nil {
			return OpenResult{}, ErrRoomNotFound
		}
		res := OpenResult{Room: room, Moved: int(n), Shuffled: int(r.int(1)), Seed: r.str(2), Waiting: r.int(3), Done: r.int(5) == 1}
		if res.Done || r.err != nil {
			return res, r.err
		}
	}
	return OpenResult{Room: room}, nil
}

// schedule stores a method and/or opening time change (nil: unchanged; a
// zero opensAt clears it) and publishes one event.
func (q *Queue) schedule(ctx context.Context, room string, m *Method, opensAt *time.Time) error {
	k := q.keys(room)
	method, at := "", "-"
	if m != nil {
		method = string(*m)
	}
	if opensAt != nil {
		at = ""
		if !opensAt.IsZero() {
			at = strconv.FormatInt(opensAt.UnixMilli(), 10)
		}
	}
	n, err := scheduleScript.Run(ctx, q.rdb, []string{k.cfg, k.stats, k.queue}, k.channel, room, method, at).Int64()
	if err != nil {
		return unavailable("schedule", err)
	}
	if n < 0 {
		return ErrRoomNotFound
	}
	return nil
}
