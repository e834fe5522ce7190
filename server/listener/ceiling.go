package listener

import (
	"fmt"
	"syscall"
)

// Ceiling returns how many public connections this process may hold
// (enforced by Public):
// the open-file limit (RLIMIT_NOFILE, soft; Go raises it to the hard limit
// at start) minus reserved descriptors (database and Redis pools, the
// management port, files) and a margin of 5 % (at least 64, at most 512).
//
// fasthttp treats running out of descriptors at accept as fatal: the
// listener stops and every stream drops. Capping connections below the
// limit turns the excess into a 503 for the newcomer instead, while
// everyone else keeps their stream.
func Ceiling(reserved int) (int, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("server: read RLIMIT_NOFILE: %w", err)
	}
	return ceilingFor(int(min(lim.Cur, 1<<30)), reserved), nil
}

func ceilingFor(nofile, reserved int) int {
	margin := min(max(nofile/20, 64), 512)
	return max(nofile-reserved-margin, 1)
}

// PerAddressCap is the per-address cap (Config.PerAddr) of a server
// configured with none: 5 % of the connection ceiling, at least 8. One
// address — one host, or one IPv6 /64 — can then never hold more than a
// twentieth of the instance, so it takes at least twenty addresses to fill
// it, while a browser (about 6 connections per host, one of them a stream)
// and a household or office behind one NAT fit easily: at the ceiling
// derived from 20,000 descriptors the cap is 970. Carrier-grade NATs and
// proxies that carry many clients belong on the access allow list or among
// the server's trusted proxies.
func PerAddressCap(maxConns int) int { return max(maxConns/20, 8) }
