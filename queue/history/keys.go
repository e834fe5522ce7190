package history

import "waitingroom/queue"

// keys are a room's history keys, all built by queue.RoomKey under the
// room's hash tag, so each script touches one Redis Cluster slot.
type keys struct {
	// points is the list of the last hour's points, oldest first.
	points string
	// meta holds the claimed and the last recorded second, the all-time
	// admitted count and the last ticket at that point, and the clock's
	// origin.
	meta string
	// tickets is the ticket clock: which ticket had been issued by which
	// second.
	tickets string
	// cfg is the room's configuration (queue.ConfigKey), there while the
	// room is: the scripts write no history for a room deleted meanwhile.
	cfg string
}

func keysOf(rooms Rooms, room string) keys {
	base := rooms.RoomKey(room, "history")
	return keys{points: base, meta: base + ":meta", tickets: base + ":tickets", cfg: rooms.RoomKey(room, queue.ConfigKey)}
}
