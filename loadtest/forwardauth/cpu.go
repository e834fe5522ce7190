package forwardauth

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is the unit of /proc's CPU times: USER_HZ, 100 on every
// Linux the tool runs on (sysconf(_SC_CLK_TCK) needs cgo to ask).
const clockTicks = 100

// cpuSource is a process whose CPU time a phase reads: with children,
// that of its children alive at the time too (an nginx master's
// workers).
type cpuSource struct {
	name     string
	pid      int
	children bool
}

// procTicks is a source's CPU time, utime + stime of /proc/<pid>/stat, in
// clock ticks: the children's own fields, not the parent's cutime and
// cstime, which count only the children that have exited.
func procTicks(src cpuSource) (int64, error) {
	t, _, err := statTicks(src.pid)
	if err != nil || !src.children {
		return t, err
	}
	for _, c := range childrenOf(src.pid) {
		if ct, _, err := statTicks(c); err == nil {
			t += ct
		}
	}
	return t, nil
}

// statTicks reads utime + stime and the parent's pid from
// /proc/<pid>/stat.
func statTicks(pid int) (ticks int64, ppid int, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces:
	// the fields that follow start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	ppid, err1 := strconv.Atoi(f[1])
	u, err2 := strconv.ParseInt(f[11], 10, 64)
	s, err3 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: unreadable fields", pid)
	}
	return u + s, ppid, nil
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []int
	for _, d := range dirs {
		c, err := strconv.Atoi(filepath.Base(d))
		if err != nil || c == pid {
			continue
		}
		if _, ppid, err := statTicks(c); err == nil && ppid == pid {
			out = append(out, c)
		}
	}
	return out
}

// machineTicks is the machine's busy and total CPU time over all its CPUs,
// in clock ticks, from the first line of /proc/stat.
func machineTicks() (busy, total int64, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	// user nice system idle iowait irq softirq steal [guest guest_nice,
	// already counted in user and nice].
	for i, v := range f[1:min(len(f), 9)] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %w", err)
		}
		total += n
		if i != 3 && i != 4 {
			busy += n
		}
	}
	return busy, total, nil
}

// cpuMark is the CPU times at the start of a measured phase.
type cpuMark struct {
	procs       map[string]int64
	busy, total int64
}

// readCPU reads the CPU times of srcs, summed by name, and the machine's;
// a process that cannot be read is left out.
func readCPU(srcs []cpuSource) cpuMark {
	m := cpuMark{procs: map[string]int64{}}
	for _, src := range srcs {
		if t, err := procTicks(src); err == nil {
			m.procs[src.name] += t
		}
	}
	m.busy, m.total, _ = machineTicks()
	return m
}
