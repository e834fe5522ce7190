package listener

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// countedConn gives its slot (and its address's) back when closed (once).
type countedConn struct {
	net.Conn
	l      *Public
	addr   string // counted address, "" when not counted per address
	once   sync.Once
	used   atomic.Bool                // a byte has been read
	timer  atomic.Pointer[time.Timer] // the first request's deadline (nil: none)
	served atomic.Bool                // a complete request reached the handler
}

func (c *countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.used.Load() {
		c.used.Store(true)
	}
	return n, err
}

// MarkServed records that a complete request arrived on c: the first
// request's deadline no longer applies. A connection not accepted by a
// Public is left alone. The server calls it for every request, before any
// routing.
func MarkServed(c net.Conn) {
	if cc, ok := c.(*countedConn); ok {
		cc.markServed()
	}
}

func (c *countedConn) markServed() {
	if !c.served.Load() && c.served.CompareAndSwap(false, true) {
		if t := c.timer.Load(); t != nil {
			t.Stop()
		}
	}
}

// expire closes the connection when its first request has not arrived.
func (c *countedConn) expire() {
	if c.served.Load() {
		return
	}
	if c.l.cfg.IdleClosed != nil {
		c.l.cfg.IdleClosed()
	}
	_ = c.Close()
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		if t := c.timer.Load(); t != nil {
			t.Stop()
		}
		c.l.open.Add(-1)
		c.l.byAddr.Release(c.addr)
		c.l.conns.Delete(c)
	})
	return c.Conn.Close()
}

// SyscallConn exposes the socket for the non-blocking liveness peek.
func (c *countedConn) SyscallConn() (syscall.RawConn, error) { return rawConn(c.Conn) }

// rawConn is the socket under a wrapped connection (the wrappers' SyscallConn).
func rawConn(c net.Conn) (syscall.RawConn, error) {
	if sc, ok := c.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.New("not a socket")
}
