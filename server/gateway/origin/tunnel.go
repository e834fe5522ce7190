package origin

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// WebSocket (tunnel.go): the visitor's connection is joined to the
// origin's byte for byte only after a real switch (101 with the matching
// Sec-WebSocket-Accept); any other answer is relayed and the connection
// closed. Tunnels are capped per client address and in total, and closed
// when idle both ways.

// Protocol switches (WebSocket). The handshake is written to the origin on
// a connection of its own and the origin's answer read like any other;
// only a real switch — 101 with Upgrade: websocket and the
// Sec-WebSocket-Accept that proves the origin read this handshake
// (RFC 6455 §4.2.2) — joins the visitor's connection to the origin's byte
// for byte. Any other answer is relayed as an ordinary response and the
// visitor's connection then closed: nothing the visitor sends after the
// handshake reaches the origin unchecked. A tunnel counts against a cap
// per client address and a total cap, and is closed after an idle time
// with no byte either way. The gateway sees no frames.

// TunnelConfig bounds the tunnels.
type TunnelConfig struct {
	Idle    time.Duration // closed after this long with no byte either way
	Max     int           // open at once on this instance
	PerAddr int           // open at once per client address (Tunnel's addr)
}

// Defaults of TunnelConfig's zero fields.
const (
	DefaultTunnelIdle    = 60 * time.Second
	DefaultMaxTunnels    = 2000
	DefaultTunnelsPerIP  = 32
	tunnelCopyBufferSize = 8 << 10
)

func (c TunnelConfig) withDefaults() TunnelConfig {
	if c.Idle <= 0 {
		c.Idle = DefaultTunnelIdle
	}
	if c.Max <= 0 {
		c.Max = DefaultMaxTunnels
	}
	if c.PerAddr <= 0 {
		c.PerAddr = DefaultTunnelsPerIP
	}
	return c
}

// Refusals of an upgrade.
var (
	ErrBadUpgrade      = errors.New("a WebSocket handshake needs GET, Sec-WebSocket-Version 13 and a Sec-WebSocket-Key of 16 bytes")
	ErrTunnelsPerAddr  = errors.New("too many open WebSocket connections from this address")
	ErrTunnelsTotal    = errors.New("too many open WebSocket connections")
	errTunnelsShutdown = errors.New("shutting down")
)

// websocketKeyGUID is RFC 6455's constant of the accept key.
const websocketKeyGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// IsUpgrade reports whether a request asks to switch to WebSocket
// (Client.Tunnel).
func IsUpgrade(h *fasthttp.RequestHeader) bool {
	if !bytes.EqualFold(h.Peek("Upgrade"), []byte("websocket")) {
		return false
	}
	for _, t := range bytes.Split(h.Peek("Connection"), []byte{','}) {
		if bytes.EqualFold(bytes.TrimSpace(t), []byte("upgrade")) {
			return true
		}
	}
	return false
}

// websocketKey returns the request's Sec-WebSocket-Key when the handshake
// is valid (RFC 6455 §4.1), else "".
func websocketKey(h *fasthttp.RequestHeader) string {
	key := string(bytes.TrimSpace(h.Peek("Sec-WebSocket-Key")))
	raw, err := base64.StdEncoding.DecodeString(key)
	if !h.IsGet() || err != nil || len(raw) != 16 || string(bytes.TrimSpace(h.Peek("Sec-WebSocket-Version"))) != "13" {
		return ""
	}
	return key
}

// acceptKey is the Sec-WebSocket-Accept that answers key.
func acceptKey(key string) string {
	sum := sha1.Sum([]byte(key + websocketKeyGUID))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// tunnels are the open joined connections: counted per client address
// and in total, closed at shutdown.
type tunnels struct {
	mu     sync.Mutex
	byAddr map[string]int
	conns  map[net.Conn]struct{}
	total  int
	done   bool
	// joined: open now; idleClosed: closed for their idle time, ever.
	joined, idleClosed atomic.Int64
}

// take counts one more tunnel for addr, or says which cap refuses it.
func (t *tunnels) take(addr string, c TunnelConfig) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.done:
		return errTunnelsShutdown
	case t.total >= c.Max:
		return ErrTunnelsTotal
	case t.byAddr[addr] >= c.PerAddr:
		return ErrTunnelsPerAddr
	}
	if t.byAddr == nil {
		t.byAddr = map[string]int{}
	}
	t.byAddr[addr]++
	t.total++
	return nil
}

func (t *tunnels) release(addr string) {
	t.mu.Lock()
	if t.byAddr[addr]--; t.byAddr[addr] <= 0 {
		delete(t.byAddr, addr)
	}
	t.total--
	t.mu.Unlock()
}

func (t *tunnels) add(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return false
	}
	if t.conns == nil {
		t.conns = map[net.Conn]struct{}{}
	}
	t.conns[c] = struct{}{}
	return true
}

func (t *tunnels) remove(c net.Conn) {
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
}

func (t *tunnels) closeAll() {
	t.mu.Lock()
	t.done = true
	for c := range t.conns {
		_ = c.Close()
	}
	t.mu.Unlock()
}

// Tunnels is how many tunnels are joined now.
func (u *Client) Tunnels() int64 { return u.open.joined.Load() }

// TunnelsIdleClosed is how many tunnels were closed after TunnelConfig.Idle
// with no byte either way, since the client was made.
func (u *Client) TunnelsIdleClosed() int64 { return u.open.idleClosed.Load() }

// Tunnel asks the origin to switch ctx's request (prepared: forwarding
// headers set) to WebSocket for the client counted as addr (the caps per
// address count by it). joined: the origin switched and the connections
// are joined once the handler returns. Otherwise the origin's answer is in
// ctx's response (nil error), or err says why not (ErrBadUpgrade,
// ErrTunnelsPerAddr, ErrTunnelsTotal or a forward's kinds).
func (u *Client) Tunnel(ctx *fasthttp.RequestCtx, addr string, own func([]byte) bool) (joined bool, err error) {
	key := websocketKey(&ctx.Request.Header)
	if key == "" {
		return false, ErrBadUpgrade
	}
	if err := u.open.take(addr, u.tc); err != nil {
		if err != ErrTunnelsPerAddr && err != ErrTunnelsTotal {
			return false, ErrBadGateway
		}
		return false, err
	}
	release := func() { u.open.release(addr) }
	c, err := u.dial()
	if err != nil {
		release()
		return false, err
	}
	ctx.Request.Header.Set("Upgrade", "websocket")
	head, err := u.handshake(ctx, c)
	if err != nil {
		c.Close()
		release()
		return false, classifyForward(err)
	}
	if head.status != fasthttp.StatusSwitchingProtocols {
		// Relayed as an ordinary answer; the origin's connection and the
		// visitor's are closed after it.
		release()
		head.close = true
		err := u.answer(ctx, c, head, own)
		ctx.SetConnectionClose()
		return false, err
	}
	if !switched(head, key) {
		c.Close()
		release()
		return false, ErrBadGateway
	}
	reply := switchReply(head, own, ctx.Request.Header.Peek("X-Request-Id"))
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(visitor net.Conn) {
		defer release()
		u.join(visitor, c, reply)
	})
	return true, nil
}

// switched reports whether a 101 is a real switch to WebSocket: Upgrade:
// websocket, Connection: upgrade, and the Sec-WebSocket-Accept that
// answers key (RFC 6455 §4.2.2).
func switched(head *originHead, key string) bool {
	return bytes.EqualFold(head.get("Upgrade"), []byte("websocket")) && head.hasToken("Connection", "upgrade") &&
		string(head.get("Sec-WebSocket-Accept")) == acceptKey(key)
}

// handshake writes the upgrade request on c and reads the answer's head
// (1xx other than 101 skipped).
func (u *Client) handshake(ctx *fasthttp.RequestCtx, c *originConn) (*originHead, error) {
	w := &deadlineWriter{c: c, d: u.connect}
	bw := bufio.NewWriterSize(w, 4<<10)
	writeHead(bw, &ctx.Request, 0, true)
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	_ = c.SetReadDeadline(time.Now().Add(u.timeout))
	return finalHead(c.br, true)
}

// switchReply is the 101 the visitor gets: the origin's end-to-end
// headers (its own cookies dropped) with the switch itself.
func switchReply(head *originHead, own func([]byte) bool, requestID []byte) []byte {
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n")
	var resp fasthttp.Response
	copyHead(&resp, head, own)
	resp.Header.VisitAll(func(k, v []byte) {
		if bytes.EqualFold(k, []byte("Content-Type")) || bytes.EqualFold(k, []byte("Content-Length")) {
			return
		}
		b.Write(k)
		b.WriteString(": ")
		b.Write(v)
		b.WriteString("\r\n")
	})
	if len(requestID) > 0 {
		b.WriteString("X-Request-Id: ")
		b.Write(requestID)
		b.WriteString("\r\n")
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

// join sends the 101 and what the origin sent after it, then copies both
// ways until either side is done or neither has sent a byte for the idle
// time, then closes both.
func (u *Client) join(visitor net.Conn, origin *originConn, reply []byte) {
	defer origin.Close()
	if !u.open.add(origin) {
		return
	}
	defer u.open.remove(origin)
	u.open.joined.Add(1)
	defer u.open.joined.Add(-1)
	_ = visitor.SetWriteDeadline(time.Now().Add(u.tc.Idle))
	if _, err := visitor.Write(reply); err != nil {
		return
	}
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	var idled atomic.Bool
	done := make(chan struct{}, 2)
	pipe := func(dst net.Conn, src io.Reader, srcConn net.Conn) {
		defer func() { done <- struct{}{} }()
		buf := make([]byte, tunnelCopyBufferSize)
		for {
			_ = srcConn.SetReadDeadline(time.Unix(0, last.Load()).Add(u.tc.Idle))
			n, err := src.Read(buf)
			if n > 0 {
				last.Store(time.Now().UnixNano())
				_ = dst.SetWriteDeadline(time.Now().Add(u.tc.Idle))
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					if time.Since(time.Unix(0, last.Load())) < u.tc.Idle {
						continue // the other way is busy
					}
					idled.Store(true)
				}
				return
			}
		}
	}
	go pipe(origin, visitor, visitor)
	go pipe(visitor, origin.br, origin.Conn)
	<-done
	visitor.Close()
	origin.Close()
	<-done
	if idled.Load() {
		u.open.idleClosed.Add(1)
	}
}
