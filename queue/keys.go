package queue

import (
	"fmt"
	"regexp"
)

// DefaultPrefix is the key prefix used when Options.Prefix is empty.
const DefaultPrefix = "wr:"

var roomName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// ValidRoom reports whether name can be a room: 1–64 characters of a–z, 0–9,
// '-' and '_', starting with a letter or digit. The name becomes a Redis
// Cluster hash tag, so braces and other punctuation are refused.
func ValidRoom(name string) bool { return roomName.MatchString(name) }

// keys are the Redis keys of one room, all under the hash tag {room}.
type keys struct {
	cfg, seq, queue, active, tokens, stats, gone, seen, channel string
	// adaptive holds the limit controller's last signals and change;
	// base + "sig:<window>" and base + "lease:<window>" are per window.
	adaptive, base string
	// prequeue holds users who arrived before a scheduled opening.
	prequeue string
}

func (q *Queue) keys(room string) keys {
	base := fmt.Sprintf("%s{%s}:", q.prefix, room)
	return keys{
		cfg:      base + "cfg",
		seq:      base + "seq",
		queue:    base + "queue",
		active:   base + "active",
		tokens:   base + "tokens",
		stats:    base + "stats",
		gone:     base + "gone",
		seen:     base + "seen",
		channel:  base + "events",
		adaptive: base + "adaptive",
		base:     base,
		prequeue: base + "prequeue",
	}
}

// roomsKey is the set of room names, read by the admission loop and the
// admin API. It is never touched by a script, so it may live on any slot.
func (q *Queue) roomsKey() string { return q.prefix + "rooms" }

// Channel returns the pub/sub channel on which admission events of room are
// published.
func (q *Queue) Channel(room string) string { return q.keys(room).channel }

// ChannelPattern returns the pattern matching every room's event channel.
func (q *Queue) ChannelPattern() string { return q.prefix + "{*}:events" }

// signalsKey is the hash of one window's order signals of a room.
func (k keys) signalsKey(window int64) string { return fmt.Sprintf("%ssig:%d", k.base, window) }

// leaseKey marks which instance runs the limit controller of a room for
// one window.
func (k keys) leaseKey(window int64) string { return fmt.Sprintf("%slease:%d", k.base, window) }
