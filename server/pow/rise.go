package pow

import "math"

// The rise: a challenge asks for RiseFrom's doubling count more bits than
// the room's difficulty — none while the network has fewer than RiseFrom
// new places not yet paid back by its limit's rate, one from RiseFrom, two
// from twice that, and so on. A solution is accepted while the network's
// count stays below what its difficulty was issued for, doubled Slack
// times (the count may rise while a visitor solves). The caller counts a
// network's new places (the server's enter_new_net limit).
const (
	RiseFrom = 8
	Slack    = 1
)

// Rise is how many bits a network's count of new places not yet paid back
// (rounded up) adds to a room's difficulty: +1 from RiseFrom, +1 for each
// doubling after it.
func Rise(level float64) int {
	if level < RiseFrom {
		return 0
	}
	return int(math.Log2(level/RiseFrom)) + 1
}

// Burst is the network count a solution of difficulty d is accepted
// under, in a room of difficulty base: below the count at which the rise
// would ask for more than d + Slack.
func Burst(d, base int) int {
	k := d - base + Slack
	switch {
	case k < 0:
		return RiseFrom >> min(-k, 8)
	case k > 20: // past any count a limit lets through
		k = 20
	}
	return RiseFrom << k
}
