package queue

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"strconv"
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

// Permutation reproduces the opening script's shuffle of n users for seed:
// out[p] is the 0-based arrival index of the user placed at position p+1.
// It is Fisher–Yates driven by SHA-1 in counter mode (see
// scripts/open.lua), so anyone holding the seed and the arrival order can
// check an opening's result.
func Permutation(seed string, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	for k := n; k >= 2; k-- {
		j := draw(seed, k)
		out[k-1], out[j] = out[j], out[k-1]
	}
	return out
}

// draw returns a uniform integer in [0, k): the first 48 bits of
// sha1(seed:k[:attempt]), rejecting the top sliver that would bias it.
func draw(seed string, k int) int {
	const span = uint64(1) << 48
	limit := span - span%uint64(k)
	for attempt := 0; ; attempt++ {
		in := seed + ":" + strconv.Itoa(k)
		if attempt > 0 {
			in += ":" + strconv.Itoa(attempt)
		}
		h := sha1.Sum([]byte(in))
		var b [8]byte
		copy(b[2:], h[:6])
		if u := binary.BigEndian.Uint64(b[:]); u < limit {
			return int(u % uint64(k))
		}
	}
}

// OpenResult is the outcome of one opening run.
type OpenResult struct {
	Room string
	// Moved is how many pre-queue users got a ticket; 0 when there was
	// nothing to do (not yet time, or another run opened the room first).
	Moved int
	// Shuffled is how many of them were shuffled (method random: those who
	// arrived before the opening time); Seed is the seed used ("" unless
	// random).
	Shuffled int
	Seed     string
	Waiting  int64 // queue length after the opening
}

// Open turns room's pre-queue into its queue in one script, once its
// opening time has come (Redis clock): shuffled with seed when the method
// is random, in arrival order otherwise, each user getting a fresh ticket.
// It is idempotent and safe to run from many instances at once: only the
// first run after the opening time moves anyone (and records its seed).
// Errors: ErrRoomNotFound, ErrUnavailable.
func (q *Queue) Open(ctx context.Context, room, seed string) (OpenResult, error) {
	if !ValidRoom(room) {
		return OpenResult{}, ErrRoomNotFound
	}
	k := q.keys(room)
	v, err := openScript.Run(ctx, q.rdb, []string{k.cfg, k.seq, k.queue, k.prequeue, k.stats, k.seen}, k.channel, room, seed).Result()
	if err != nil {
		return OpenResult{}, unavailable("open", err)
	}
	r := asReply("open", v)
	n := r.int(0)
	if n < 0 && r.err == nil {
		return OpenResult{}, ErrRoomNotFound
	}
	res := OpenResult{Room: room, Moved: int(n), Shuffled: int(r.int(1)), Seed: r.str(2), Waiting: r.int(3)}
	return res, r.err
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
