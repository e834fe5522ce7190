package listener

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
)

// Config is the public listener's configuration and its callbacks into the
// server. The zero values of the callbacks do nothing.
type Config struct {
	// MaxConns caps the open public connections (the composition root
	// derives it with Ceiling when the operator sets none); it must be
	// positive here.
	MaxConns int
	// PerAddr caps the open connections of one client address (AddrKey of
	// the peer); 0: no cap. A server configured with none passes
	// PerAddressCap's.
	PerAddr int
	// FirstRequest closes a connection that has not sent one complete
	// request this long after accept; 0: no deadline.
	FirstRequest time.Duration
	// Exempt says which peers are counted against the ceiling only, not
	// per address (the server's trusted proxies and allow list).
	Exempt func(net.IP) bool
	// Refused is called for each refused connection with its reason
	// (RefusedCeiling or RefusedAddress).
	Refused func(reason string)
	// IdleClosed is called for each connection closed by the first-request
	// deadline.
	IdleClosed func()
	// Logger receives the per-address refusals (at most one line a second)
	// and running out of descriptors; slog.Default() when nil.
	Logger *slog.Logger
}

// Reasons of a refused connection (the label of
// waitingroom_connections_refused_total).
const (
	RefusedCeiling = "ceiling"
	RefusedAddress = "per_address"
)

// Public caps the open public connections at MaxConns, counting every
// accepted connection until it is closed — including streams, which
// fasthttp hands over (hijacks) and then no longer counts in its own
// Concurrency. A connection past the cap gets a 503 with Retry-After and is
// closed at once; the ones already open are untouched. Running out of
// descriptors at accept anyway (other files) pauses accepting briefly
// instead of stopping the server.
//
// It also caps the connections of each client address (AddrKey of the
// peer) at PerAddr, counted the same way, with the same refusal: one
// address holding idle sockets or streams cannot take the instance from
// everyone else. Peers for which Exempt says so are counted against the
// ceiling only: trusted proxies (their connections carry many clients,
// whose streams the server's stream handlers count instead) and addresses
// on the access allow list (read when the connection is accepted).
//
// A connection that has not sent one complete request within FirstRequest
// of its accept is closed (MarkServed marks it when a request reaches the
// handler): without that, a socket that sends nothing holds its slot for
// fasthttp's ReadTimeout (10 s), and one that sends a request line only,
// or a byte every few seconds, for longer. After the first request the
// connection is an HTTP client like any other and keep-alive idle is
// fasthttp's IdleTimeout (90 s, set by the server), left as it is on
// purpose: it outlasts the upstream keep-alive of the proxies in front
// (nginx: 60 s), so the server never closes a connection a proxy is about
// to reuse, and an address that keeps idle connections open is bounded by
// PerAddr.
//
// Every connection is also guarded against a header line without a colon
// (GuardHeaderLines).
type Public struct {
	net.Listener
	cfg    Config
	log    *slog.Logger
	open   atomic.Int64
	conns  sync.Map     // *countedConn → struct{}: every open connection
	byAddr Counts       // open connections per counted address
	logged atomic.Int64 // Unix seconds of the last per-address refusal logged
}

// NewPublic returns ln capped and guarded as cfg says.
func NewPublic(ln net.Listener, cfg Config) *Public {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Public{Listener: GuardHeaderLines(ln), cfg: cfg, log: log}
}

// refusal is written to a connection past the cap, before any request.
var refusal = refusalFor("this server is at its connection limit; retry in a moment")

// addrRefusal is written to a connection past its address's cap.
var addrRefusal = refusalFor("too many open connections from your address; close some, or retry in a moment")

func refusalFor(message string) []byte {
	body := `{"error":"unavailable","message":"` + message + `"}`
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 5\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

// Accept returns the next connection within the caps, refusing the others.
func (l *Public) Accept() (net.Conn, error) {
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
		if l.open.Add(1) > int64(l.cfg.MaxConns) {
			l.open.Add(-1)
			l.refuse(c, refusal, RefusedCeiling)
			continue
		}
		key, ok := l.admitAddr(c)
		if !ok {
			l.open.Add(-1)
			l.refuse(c, addrRefusal, RefusedAddress)
			l.logRefusal(key)
			continue
		}
		cc := &countedConn{Conn: c, l: l, addr: key}
		l.conns.Store(cc, struct{}{})
		if l.cfg.FirstRequest > 0 {
			cc.timer.Store(time.AfterFunc(l.cfg.FirstRequest, cc.expire))
		}
		return cc, nil
	}
}

func (l *Public) refuse(c net.Conn, msg []byte, reason string) {
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write(msg)
	_ = c.Close()
	if l.cfg.Refused != nil {
		l.cfg.Refused(reason)
	}
}

// admitAddr counts c against its address's cap; key is "" for a peer not
// counted. ok is false when the address is at its cap (key names it).
func (l *Public) admitAddr(c net.Conn) (key string, ok bool) {
	if l.cfg.PerAddr <= 0 {
		return "", true
	}
	ta, isTCP := c.RemoteAddr().(*net.TCPAddr)
	if !isTCP {
		return "", true
	}
	if l.cfg.Exempt != nil && l.cfg.Exempt(ta.IP) {
		return "", true
	}
	key = AddrKey(ta.IP)
	return key, l.byAddr.Acquire(key, l.cfg.PerAddr)
}

// logRefusal records a per-address refusal, at most one line a second (a
// flood must not become a flood of log lines; the metric counts them all).
func (l *Public) logRefusal(key string) {
	now := time.Now().Unix()
	if last := l.logged.Load(); last == now || !l.logged.CompareAndSwap(last, now) {
		return
	}
	l.log.LogAttrs(context.Background(), slog.LevelWarn, "connection refused: address at its connection cap",
		slog.String("addr", key), slog.Int("cap", l.cfg.PerAddr))
}

// CloseUnused closes the connections that have not sent a byte yet —
// browsers open spare connections ahead of need — so a shutdown does not
// wait for them (fasthttp would, for seconds). Call it repeatedly while
// the server shuts down: it also catches ones accepted meanwhile.
func (l *Public) CloseUnused() {
	l.conns.Range(func(k, _ any) bool {
		if c := k.(*countedConn); !c.used.Load() {
			_ = c.Close()
		}
		return true
	})
}
