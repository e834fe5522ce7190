// Package freeport finds a port for a server a test or a load scenario
// starts as a process of its own (redis-server, Caddy, nginx, an origin,
// a child instance): one no one listened on a moment ago on any
// interface, below the kernel's ephemeral range, and held by no other
// process that uses this package.
//
// Such a server binds its port only once it is up, and a test may stop it
// and start it again on the same port (a Redis restart). A port from the
// ephemeral range (where listening on port 0 picks) can meanwhile become
// the source port of any outgoing connection, and Caddy's bind on every
// interface then fails; so ports come from below that range. And a port
// left free for a moment could be handed by another test process to a
// server of its own — the restarted Redis then fails to bind, and the test
// talks to a stranger, then to nobody. So each port handed out stays
// reserved for the life of the process that got it: a lock on a file
// named after the port (in os.TempDir()/waitingroom-ports), which the
// kernel releases when the process ends, however it ends.
package freeport

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// low is the first port handed out.
const low = 10000

// handed is the state of this process: the next port to try, and the
// lock files it holds (kept open, and referenced, so the locks last as
// long as the process).
var handed struct {
	sync.Mutex
	next  int
	locks []*os.File
}

// BelowEphemeral returns a loopback address ("127.0.0.1:port") whose port
// was free on every interface a moment ago, from 10000 up to the start of
// the ephemeral range, and is reserved to this process: never handed out
// again, by this process or another using this package, while it lives.
func BelowEphemeral() (string, error) {
	high := ephemeralStart()
	handed.Lock()
	defer handed.Unlock()
	if handed.next < low || handed.next >= high {
		handed.next = low + rand.IntN(high-low)
	}
	for range high - low {
		port := handed.next
		if handed.next++; handed.next >= high {
			handed.next = low
		}
		lock, ok := reserve(port)
		if !ok {
			continue
		}
		l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			release(lock)
			continue
		}
		l.Close()
		if lock != nil {
			handed.locks = append(handed.locks, lock)
		}
		return "127.0.0.1:" + strconv.Itoa(port), nil
	}
	return "", errors.New("freeport: no free port between 10000 and the ephemeral range")
}

// ephemeralStart is the first port of the kernel's ephemeral range
// (32768 when it cannot be read).
func ephemeralStart() int {
	start := 32768
	if raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(raw)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > low+2000 {
				start = n
			}
		}
	}
	return start
}
