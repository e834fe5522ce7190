package members

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultExpiry is how long an instance stays live after its last beat
// when Options.Expiry is not set: five beats of the default admission
// interval (100 ms), so a stopped instance's rooms are taken over within
// about half a second.
const DefaultExpiry = 500 * time.Millisecond

// Options configure a Members.
type Options struct {
	// Key is the sorted set of live instances ("<prefix>instances").
	Key string
	// ID is this instance's id: unique among the live instances.
	ID string
	// Expiry: an instance whose last beat is older is taken for stopped
	// (DefaultExpiry when 0). Beats must come more often than that.
	Expiry time.Duration
}

// Members is one instance's view of the live instances.
type Members struct {
	rdb  redis.UniversalClient
	o    Options
	live atomic.Pointer[[]string] // sorted ids, this one included; nil before the first beat
}

// New returns the Members of the instance o.ID, with its key in rdb.
func New(rdb redis.UniversalClient, o Options) *Members {
	if o.Expiry <= 0 {
		o.Expiry = DefaultExpiry
	}
	return &Members{rdb: rdb, o: o}
}

// ID is this instance's id.
func (m *Members) ID() string { return m.o.ID }

// beatScript records a beat and returns the live instances.
//
// KEYS[1] the live set (member: instance id, score: last beat, ms, Redis clock)
// ARGV[1] this instance's id
// ARGV[2] expiry, ms
// Returns the ids of the instances beaten within the expiry, this one included.
var beatScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expiry = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - expiry)
redis.call('PEXPIRE', KEYS[1], expiry * 10)
return redis.call('ZRANGE', KEYS[1], 0, -1)
`)

// Beat records that this instance is live and reads the live set; changed
// says whether the set differs from the one read at the previous beat (the
// first beat is a change). On an error the previous view is kept: while
// Redis cannot be reached no room is run anyway.
func (m *Members) Beat(ctx context.Context) (changed bool, err error) {
	ids, err := beatScript.Run(ctx, m.rdb, []string{m.o.Key}, m.o.ID, m.o.Expiry.Milliseconds()).StringSlice()
	if err != nil {
		return false, fmt.Errorf("members: beat: %w", err)
	}
	if !slices.Contains(ids, m.o.ID) {
		// Cannot happen: the script added it. Keep this instance in its
		// own view, so that it never thinks nobody runs its rooms.
		ids = append(ids, m.o.ID)
	}
	slices.Sort(ids)
	old := m.live.Swap(&ids)
	return old == nil || !slices.Equal(*old, ids), nil
}

// Leave removes this instance from the live set at once (a clean stop), so
// that the others take its rooms over at their next beat instead of after
// the expiry.
func (m *Members) Leave(ctx context.Context) error {
	if err := m.rdb.ZRem(ctx, m.o.Key, m.o.ID).Err(); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("members: leave: %w", err)
	}
	return nil
}

// Live returns the live instances as of the last beat (sorted; nil before
// the first).
func (m *Members) Live() []string {
	if p := m.live.Load(); p != nil {
		return slices.Clone(*p)
	}
	return nil
}

// Owns reports whether this instance runs room: the live instance with the
// highest rendezvous hash for it. Before the first beat it owns nothing
// (it does not know who else is there).
func (m *Members) Owns(room string) bool {
	p := m.live.Load()
	if p == nil {
		return false
	}
	return Owner(*p, room) == m.o.ID
}

// Owner returns which of ids runs room ("" when ids is empty): the id
// whose score(id, room) is highest, ties (which need a 64-bit collision)
// to the smaller id. Every instance computes the same owner from the same
// set.
func Owner(ids []string, room string) string {
	best, bestScore := "", uint64(0)
	for _, id := range ids {
		s := score(id, room)
		if best == "" || s > bestScore || (s == bestScore && id < best) {
			best, bestScore = id, s
		}
	}
	return best
}

// score is the rendezvous weight of (id, room): FNV-1a over both with a
// separator, then mixed (splitmix64's finalizer) so that similar ids and
// names spread evenly.
func score(id, room string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(room))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
