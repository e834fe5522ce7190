package adaptive

import (
	"strconv"

	"waitingroom/queue"
)

// keys are the Redis keys the controller touches for one room, all built
// by queue.RoomKey under the room's hash tag, so adapt.lua touches one
// Redis Cluster slot.
type keys struct {
	// cfg is the queue's configuration hash of the room (queue.ConfigKey):
	// adapt.lua sets its target.
	cfg string
	// adaptive holds the controller's last signals and change.
	adaptive string
	// base + "sig:<window>" and base + "lease:<window>" are per window.
	base string
}

func keysOf(rooms Rooms, room string) keys {
	base := rooms.RoomKey(room, "")
	return keys{cfg: base + queue.ConfigKey, adaptive: base + "adaptive", base: base}
}

// signals is the hash of one window's order signals of the room.
func (k keys) signals(window int64) string { return k.base + "sig:" + strconv.FormatInt(window, 10) }

// lease marks which instance runs the controller of the room for one
// window.
func (k keys) lease(window int64) string { return k.base + "lease:" + strconv.FormatInt(window, 10) }
