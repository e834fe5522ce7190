package server

import (
	"fmt"
	"syscall"
)

// ConnCeiling returns how many public connections this process may hold:
// the open-file limit (RLIMIT_NOFILE, soft; Go raises it to the hard limit
// at start) minus reserved descriptors (database and Redis pools, the
// management port, files) and a margin of 5 % (at least 64, at most 512).
//
// fasthttp treats running out of descriptors at accept as fatal: the
// listener stops and every stream drops. Capping Fiber's Concurrency below
// the limit turns the excess into a 503 for the newcomer instead, while
// everyone else keeps their stream.
func ConnCeiling(reserved int) (int, error) {
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
