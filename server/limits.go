package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
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

// PerAddressCap is the default of WR_MAX_CONNS_PER_IP: 5 % of the
// connection ceiling, at least 8. One address — one host, or one IPv6 /64 —
// can then never hold more than a twentieth of the instance, so it takes at
// least twenty addresses to fill it, while a browser (about 6 connections
// per host, one of them a stream) and a household or office behind one NAT
// fit easily: at the ceiling derived from 20,000 descriptors the cap is 970.
// Carrier-grade NATs and proxies that carry many clients belong on the
// access allow list or in WR_TRUSTED_PROXIES.
func PerAddressCap(maxConns int) int { return max(maxConns/20, 8) }

// limitListener caps the open public connections at max, counting every
// accepted connection until it is closed — including streams, which
// fasthttp hands over (hijacks) and then no longer counts in its own
// Concurrency. A connection past the cap gets a 503 with Retry-After and is
// closed at once; the ones already open are untouched. Running out of
// descriptors at accept anyway (other files) pauses accepting briefly
// instead of stopping the server.
//
// It also caps the connections of each client address (addrKey of the
// peer) at perAddr, counted the same way, with the same refusal: one
// address holding idle sockets or streams cannot take the instance from
// everyone else. Peers for which exempt says so are counted against the
// ceiling only: trusted proxies (their connections carry many clients,
// whose streams the stream handlers count instead, see holdStream) and
// addresses on the access allow list (read when the connection is
// accepted).
//
// A connection that has not sent one complete request within firstRequest
// of its accept is closed (served marks it when a request reaches the
// handler): without that, a socket that sends nothing holds its slot for
// fasthttp's ReadTimeout (10 s), and one that sends a request line only,
// or a byte every few seconds, for longer. After the first request the
// connection is an HTTP client like any other and keep-alive idle is
// fasthttp's IdleTimeout (90 s, http.go), left as it is on purpose: it
// outlasts the upstream keep-alive of the proxies in front (nginx: 60 s),
// so the server never closes a connection a proxy is about to reuse, and
// an address that keeps idle connections open is bounded by perAddr.
type limitListener struct {
	net.Listener
	max          int64
	perAddr      int               // 0: no per-address cap
	exempt       func(net.IP) bool // peers not capped per address (nil: none)
	firstRequest time.Duration     // 0: no deadline for the first request
	refused      func(reason string)
	idleClosed   func()
	log          *slog.Logger
	open         atomic.Int64
	conns        sync.Map // *countedConn → struct{}: every open connection

	byAddr addrCounts   // open connections per counted address
	logged atomic.Int64 // Unix seconds of the last per-address refusal logged
}

// Reasons of a refused connection (the label of
// waitingroom_connections_refused_total).
const (
	refusedCeiling = "ceiling"
	refusedAddress = "per_address"
)

// refusal is written to a connection past the cap, before any request.
var refusal = refusalFor("this server is at its connection limit; retry in a moment")

// addrRefusal is written to a connection past its address's cap.
var addrRefusal = refusalFor("too many open connections from your address; close some, or retry in a moment")

func refusalFor(message string) []byte {
	body := `{"error":"unavailable","message":"` + message + `"}`
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 5\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

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
			l.refuse(c, refusal, refusedCeiling)
			continue
		}
		key, ok := l.admitAddr(c)
		if !ok {
			l.open.Add(-1)
			l.refuse(c, addrRefusal, refusedAddress)
			l.logRefusal(key)
			continue
		}
		cc := &countedConn{Conn: c, l: l, addr: key}
		l.conns.Store(cc, struct{}{})
		if l.firstRequest > 0 {
			cc.timer.Store(time.AfterFunc(l.firstRequest, cc.expire))
		}
		return cc, nil
	}
}

func (l *limitListener) refuse(c net.Conn, msg []byte, reason string) {
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write(msg)
	_ = c.Close()
	if l.refused != nil {
		l.refused(reason)
	}
}

// admitAddr counts c against its address's cap; key is "" for a peer not
// counted. ok is false when the address is at its cap (key names it).
func (l *limitListener) admitAddr(c net.Conn) (key string, ok bool) {
	if l.perAddr <= 0 {
		return "", true
	}
	ta, isTCP := c.RemoteAddr().(*net.TCPAddr)
	if !isTCP {
		return "", true
	}
	if l.exempt != nil && l.exempt(ta.IP) {
		return "", true
	}
	key = addrKey(ta.IP)
	return key, l.byAddr.acquire(key, l.perAddr)
}

// logRefusal records a per-address refusal, at most one line a second (a
// flood must not become a flood of log lines; the metric counts them all).
func (l *limitListener) logRefusal(key string) {
	now := time.Now().Unix()
	if last := l.logged.Load(); last == now || !l.logged.CompareAndSwap(last, now) {
		return
	}
	l.log.LogAttrs(context.Background(), slog.LevelWarn, "connection refused: address at its connection cap",
		slog.String("addr", key), slog.Int("cap", l.perAddr))
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

// countedConn gives its slot (and its address's) back when closed (once).
type countedConn struct {
	net.Conn
	l      *limitListener
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

// markServed records that a complete request arrived: the first request's
// deadline no longer applies.
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
	if c.l.idleClosed != nil {
		c.l.idleClosed()
	}
	_ = c.Close()
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		if t := c.timer.Load(); t != nil {
			t.Stop()
		}
		c.l.open.Add(-1)
		c.l.byAddr.release(c.addr)
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

// markServed is the public app's outermost handler step: the connection
// of every request that reached it is past its first-request deadline.
func markServed(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		if cc, ok := ctx.Conn().(*countedConn); ok {
			cc.markServed()
		}
		next(ctx)
	}
}

// addrCounts counts what each address holds open, against a cap.
type addrCounts struct {
	mu sync.Mutex
	m  map[string]int
}

// acquire takes one of key's cap slots; false when all are taken.
func (a *addrCounts) acquire(key string, cap int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]int{}
	}
	if a.m[key] >= cap {
		return false
	}
	a.m[key]++
	return true
}

// release gives back a slot of key ("" is a no-op: not counted).
func (a *addrCounts) release(key string) {
	if key == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m[key]--; a.m[key] <= 0 {
		delete(a.m, key)
	}
}
