package queue

import (
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// DefaultPrefix is the key prefix used when Options.Prefix is empty.
const DefaultPrefix = "wr:"

// ValidRoom reports whether name can be a room: 1–64 characters of a–z, 0–9,
// '-' and '_', starting with a letter or digit. The name becomes a Redis
// Cluster hash tag, so braces and other punctuation are refused.
func ValidRoom(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '-' || c == '_') && i > 0:
		default:
			return false
		}
	}
	return true
}

// RoomKey returns the Redis key "<prefix>{room}:<name>": a key under the
// room's hash tag, so in the one Redis Cluster slot of all the room's keys.
// Every key of a room is built by it: the queue's own below, and those of
// packages that keep state beside a room (queue/adaptive: its signals,
// lease and state), so that one script can touch theirs and the room's
// together. Names the queue uses are listed in keys; ConfigKey is the one
// another package may touch.
func (q *Queue) RoomKey(room, name string) string {
	return q.prefix + "{" + room + "}:" + name
}

// ConfigKey is the name (for RoomKey) of a room's configuration hash:
// target, ttl_ms, paused, mode, min_active, max_active, method, opens_at,
// message, display_name, description, expected_order_ms.
// The adaptive controller's script sets its target.
const ConfigKey = "cfg"

// MeasuredKey is the name (for RoomKey) of the hash of what a room last
// measured of its orders (RecordMeasured): what its next sale's ETA
// stands on until that sale has measured its own.
const MeasuredKey = "measured"

// keys are the Redis keys of one room, all under the hash tag {room}.
type keys struct {
	cfg, seq, queue, active, tokens, stats, gone, seen, channel string
	// prequeue holds users who arrived before a scheduled opening.
	prequeue string
	// idle remembers the waiting users the admission run dropped as idle
	// (member: user, score: when, ms), so the not-in-queue answer can say
	// why; entering again forgets it. Entries older than idleMemory go,
	// and the key expires idleMemory after the last drop.
	idle string
	// back holds the waiting users the admission passed over as absent
	// and has seen again since (member: user, score: ticket): the next
	// runs take them first (admit.lua).
	back string
}

func (q *Queue) keys(room string) keys {
	// One string holds them all (an enter builds them on every call).
	base := q.RoomKey(room, "")
	var b strings.Builder
	b.Grow(len(keyNames)*len(base) + keyNamesLen)
	var at [len(keyNames) + 1]int
	for i, name := range keyNames {
		b.WriteString(base)
		b.WriteString(name)
		at[i+1] = b.Len()
	}
	all := b.String()
	k := func(i int) string { return all[at[i]:at[i+1]] }
	ks := keys{cfg: k(0), seq: k(1), queue: k(2), active: k(3), tokens: k(4), stats: k(5),
		gone: k(6), seen: k(7), channel: k(8), prequeue: k(9), idle: k(10), back: k(11)}
	if q.dbTag != "" {
		ks.channel += q.dbTag
	}
	return ks
}

// keyNames are the names of keys' fields, in its order.
var keyNames = [...]string{ConfigKey, "seq", "queue", "active", "tokens", "stats", "gone", "seen", "events", "prequeue", "idle", "back"}

// keyNamesLen is the sum of keyNames' lengths.
var keyNamesLen = func() int {
	n := 0
	for _, name := range keyNames {
		n += len(name)
	}
	return n
}()

// roomsKey is the set of room names, read by the admission loop and the
// admin API. It is never touched by a script, so it may live on any slot.
func (q *Queue) roomsKey() string { return q.prefix + "rooms" }

// EventChannel is room's event channel (see event.go):
// "<prefix>{room}:events", followed by "@<n>" on database n > 0. Pub/sub
// is shared by every database of a Redis, so two deployments on one Redis
// with different database numbers (and the same prefix) would otherwise
// hear each other's events; database 0's channels keep their names, which
// instances of earlier versions publish to and hear.
func (q *Queue) EventChannel(room string) string { return q.RoomKey(room, "events") + q.dbTag }

// EventPattern matches every room's event channel (EventChannel).
func (q *Queue) EventPattern() string { return q.EventChannel("*") }

// channelTag is the event channels' suffix for rdb's database: "" for 0
// (and a Cluster, which has only that one), else "@<n>".
func channelTag(rdb redis.UniversalClient) string {
	db := 0
	switch c := rdb.(type) {
	case *redis.Client:
		db = c.Options().DB
	case *redis.Ring:
		db = c.Options().DB
	}
	if db == 0 {
		return ""
	}
	return "@" + strconv.Itoa(db)
}
