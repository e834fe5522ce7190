package systemtest

import (
	"syscall"
	"time"
)

// CPUTime is the process's user+system CPU time so far.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
