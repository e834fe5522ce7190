package queue

import "regexp"

// DefaultPrefix is the key prefix used when Options.Prefix is empty.
const DefaultPrefix = "wr:"

var roomName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// ValidRoom reports whether name can be a room: 1–64 characters of a–z, 0–9,
// '-' and '_', starting with a letter or digit. The name becomes a Redis
// Cluster hash tag, so braces and other punctuation are refused.
func ValidRoom(name string) bool { return roomName.MatchString(name) }

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
// message, display_name, description.
// The adaptive controller's script sets its target.
const ConfigKey = "cfg"

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
}

func (q *Queue) keys(room string) keys {
	base := q.RoomKey(room, "")
	return keys{
		cfg:      base + ConfigKey,
		seq:      base + "seq",
		queue:    base + "queue",
		active:   base + "active",
		tokens:   base + "tokens",
		stats:    base + "stats",
		gone:     base + "gone",
		seen:     base + "seen",
		channel:  base + "events",
		prequeue: base + "prequeue",
		idle:     base + "idle",
	}
}

// roomsKey is the set of room names, read by the admission loop and the
// admin API. It is never touched by a script, so it may live on any slot.
func (q *Queue) roomsKey() string { return q.prefix + "rooms" }

// channelPattern matches every room's event channel (keys.channel; see
// event.go).
func (q *Queue) channelPattern() string { return q.RoomKey("*", "events") }
