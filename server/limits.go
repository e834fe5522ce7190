package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ConnCeiling returns how many public connections this process may hold
// (enforced by limitListener):
// the open-file limit (RLIMIT_NOFILE, soft; Go raises it to the hard limit
// at start) minus reserved descriptors (database and Redis pools, the
// management port, files) and a margin of 5 % (at least 64, at most 512).
//
// fasthttp treats running out of descriptors at accept as fatal: the
// listener stops and every stream drops. Capping connections below the
// limit turns the excess into a 503 for the newcomer instead, while
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

// limitListener caps the open public connections at max, counting every
// accepted connection until it is closed — including streams, which
// fasthttp hands over (hijacks) and then no longer counts in its own
// Concurrency. A connection past the cap gets a 503 with Retry-After and is
// closed at once; the ones already open are untouched. Running out of
// descriptors at accept anyway (other files) pauses accepting briefly
// instead of stopping the server.
type limitListener struct {
	net.Listener
	max     int64
	open    atomic.Int64
	refused func()
	log     *slog.Logger
	conns   sync.Map // *countedConn → struct{}: every open connection
}

// refusal is written to a connection past the cap, before any request.
var refusal = func() []byte {
	body := `{"error":"unavailable","message":"this server is at its connection limit; retry in a moment"}`
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 5\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}()

func (l *limitListener) Accept() (net.Conn, error) {
	backoff := 5 * time.Millisecond
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				l.log.Warn("out of file descriptors at accept; pausing", "error", err.Error())
				time.Sleep(backoff)
				backoff = min(2*backoff, time.Second)
				continue
			}
			return nil, err
		}
		backoff = 5 * time.Millisecond
		if l.open.Add(1) > l.max {
			l.open.Add(-1)
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = c.Write(refusal)
			_ = c.Close()
			if l.refused != nil {
				l.refused()
			}
			continue
		}
		cc := &countedConn{Conn: c, l: l}
		l.conns.Store(cc, struct{}{})
		return cc, nil
	}
}

// closeUnused closes the connections that have not sent a byte yet —
// browsers open spare connections ahead of need — so a shutdown does not
// wait for them (fasthttp would, for seconds).
func (l *limitListener) closeUnused() {
	l.conns.Range(func(k, _ any) bool {
		if c := k.(*countedConn); !c.used.Load() {
			_ = c.Close()
		}
		return true
	})
}

// countedConn gives its slot back when closed (once).
type countedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
	used atomic.Bool // a byte has been read
}

func (c *countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.used.Load() {
		c.used.Store(true)
	}
	return n, err
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.l.open.Add(-1)
		c.l.conns.Delete(c)
	})
	return c.Conn.Close()
}

// SyscallConn exposes the socket for the non-blocking liveness peek.
func (c *countedConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.New("not a socket")
}
