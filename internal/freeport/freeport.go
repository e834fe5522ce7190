// Package freeport finds a port for a server a test or a load scenario
// starts as a process of its own (Caddy, nginx, an origin): one no one
// listened on a moment ago on any interface, below the kernel's
// ephemeral range. Caddy binds its port on every interface, and that bind
// fails while a connection of this machine uses the port as its own end,
// which a port of the ephemeral range (where listening on port 0 picks)
// often is on a busy machine.
package freeport

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// BelowEphemeral returns a loopback address ("127.0.0.1:port") whose port
// was free on every interface a moment ago, from 10000 up to the start of
// the ephemeral range.
func BelowEphemeral() (string, error) {
	low := 32768
	if raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(raw)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 12000 {
				low = n
			}
		}
	}
	for range 200 {
		port := 10000 + rand.IntN(low-10000)
		l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		l.Close()
		return "127.0.0.1:" + strconv.Itoa(port), nil
	}
	return "", errors.New("no free port between 10000 and the ephemeral range")
}
