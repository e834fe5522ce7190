package push

import (
	"encoding/binary"
	"errors"
	"net"
	"syscall"
	"time"
)

// wsPeer reads what a WebSocket client sends without a goroutine of its
// own: the stream's liveness check (every livenessEvery, a hub chore)
// reads whatever has arrived and never waits for more. A stream so holds
// one goroutine, as an SSE stream does, instead of a second one parked in
// a read for hours (half a waiting WebSocket stream's memory).
//
// Clients send only control frames (RFC 6455: pongs to the stream's
// pings, a ping, a close); a data frame of up to wsReadLimit bytes is
// read and ignored. Whatever the library would refuse is refused the
// strict way, ending the stream with the close code that says why: an
// unmasked frame, reserved bits or opcodes, a fragmented or long control
// frame (1002), a frame over wsReadLimit (1009). A client that answered
// none of the pings for 2 × heartbeatEvery has gone.
//
// Bytes a client sent before the upgrade's answer (RFC 6455 forbids it)
// are not read: its frames would be misread, and the stream ends on the
// first one that breaks a rule.
type wsPeer struct {
	raw   syscall.RawConn // nil: the connection is no socket; the peer reads nothing
	heard time.Time       // the last pong, or the stream's start
	// partial is the start of a frame that has not arrived whole (nil
	// while none: a stream keeps no buffer between messages).
	partial []byte
}

// wsReadMax bounds what one check reads: a client that sends more than
// this in two seconds is read on, a chunk a check, at its own cost.
const wsReadMax = 4 << 10

// Close codes (RFC 6455, 7.4.1) a check may end a stream with.
const (
	wsCloseNormal     = 1000
	wsCloseProtocol   = 1002
	wsCloseTooBig     = 1009
	wsNoClose         = 0 // end without a close frame: the client left or stopped answering
	wsOpBinary        = 0x2
	wsOpClose         = 0x8
	wsOpPing          = 0x9
	wsOpPong          = 0xA
	wsMaxControlFrame = 125
)

// wsVerdict is what a check found: pings to answer, and whether the
// stream ends (and with which close code).
type wsVerdict struct {
	pings [][]byte // the payloads of the pings received, to echo in pongs
	end   bool
	code  int // the close code to send when end; wsNoClose: none
	why   string
}

// newWSPeer returns the reader of the client frames that arrive on conn
// (the socket, or a wrapper of the listener's that exposes it).
func newWSPeer(conn net.Conn, now time.Time) *wsPeer {
	p := &wsPeer{heard: now}
	if sc, ok := conn.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			p.raw = raw
		}
	}
	return p
}

// check reads what the client has sent so far, without waiting, and says
// what to do about it.
func (p *wsPeer) check(now time.Time, pongWait time.Duration) wsVerdict {
	if p.raw == nil {
		return wsVerdict{}
	}
	b := bufs.Get().(*[]byte)
	defer bufs.Put(b)
	buf := append((*b)[:0], p.partial...)
	buf, eof := p.recv(buf)
	*b = buf[:0]
	v := p.frames(buf, now)
	switch {
	case v.end:
	case eof:
		v = wsVerdict{end: true, why: "client closed the connection"}
	case now.Sub(p.heard) > pongWait:
		v = wsVerdict{end: true, why: "no pong"}
	}
	return v
}

// recv appends what the socket holds, up to wsReadMax bytes, to buf; eof
// is true when the client has closed its side or the connection failed.
func (p *wsPeer) recv(buf []byte) (_ []byte, eof bool) {
	for len(buf) < wsReadMax {
		if cap(buf)-len(buf) < 512 {
			buf = append(buf, make([]byte, 512)...)[:len(buf)]
		}
		var n int
		var err error
		rerr := p.raw.Read(func(fd uintptr) bool {
			n, _, err = syscall.Recvfrom(int(fd), buf[len(buf):cap(buf)], syscall.MSG_DONTWAIT)
			return true // never wait for readability
		})
		switch {
		case rerr != nil:
			return buf, true
		case errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR):
			return buf, false
		case err != nil || n == 0:
			return buf, true
		}
		buf = buf[:len(buf)+n]
	}
	return buf, false
}

// frames reads the whole frames at the start of buf, keeps the start of
// one not yet whole in p.partial, and says what they ask for.
func (p *wsPeer) frames(buf []byte, now time.Time) (v wsVerdict) {
	for len(buf) > 0 {
		f, n, err := wsParse(buf)
		switch {
		case err != nil:
			return wsVerdict{end: true, code: err.code, why: err.why}
		case n == 0: // not whole yet
			p.partial = append(p.partial[:0], buf...)
			return v
		}
		buf = buf[n:]
		switch f.op {
		case wsOpClose:
			return wsVerdict{end: true, code: wsCloseNormal, why: "client closed the stream"}
		case wsOpPing:
			v.pings = append(v.pings, append([]byte(nil), f.payload...))
		case wsOpPong:
			p.heard = now
		}
	}
	p.partial = nil
	return v
}

// wsClientFrame is one client frame, its payload unmasked in place.
type wsClientFrame struct {
	op      byte
	payload []byte
}

// wsRefusal is a frame that ends the stream.
type wsRefusal struct {
	code int
	why  string
}

// wsParse reads the frame at the start of b: n is its length, 0 while it
// has not arrived whole. It unmasks the payload in b.
func wsParse(b []byte) (f wsClientFrame, n int, refused *wsRefusal) {
	if len(b) < 2 {
		return f, 0, nil
	}
	fin, rsv, op := b[0]&0x80 != 0, b[0]&0x70, b[0]&0x0f
	masked, size, head := b[1]&0x80 != 0, uint64(b[1]&0x7f), 2
	switch {
	case rsv != 0:
		return f, 0, &wsRefusal{wsCloseProtocol, "reserved bits set"}
	case !masked:
		return f, 0, &wsRefusal{wsCloseProtocol, "unmasked client frame"}
	case op > wsOpBinary && op < wsOpClose || op > wsOpPong:
		return f, 0, &wsRefusal{wsCloseProtocol, "reserved opcode"}
	case op >= wsOpClose && (!fin || size > wsMaxControlFrame):
		return f, 0, &wsRefusal{wsCloseProtocol, "fragmented or long control frame"}
	}
	switch size {
	case 126:
		if len(b) < 4 {
			return f, 0, nil
		}
		size, head = uint64(binary.BigEndian.Uint16(b[2:])), 4
	case 127:
		if len(b) < 10 {
			return f, 0, nil
		}
		size, head = binary.BigEndian.Uint64(b[2:]), 10
	}
	if size > wsReadLimit {
		return f, 0, &wsRefusal{wsCloseTooBig, "frame over the read limit"}
	}
	end := head + 4 + int(size)
	if len(b) < end {
		return f, 0, nil
	}
	key, payload := b[head:head+4], b[head+4:end]
	for i := range payload {
		payload[i] ^= key[i&3]
	}
	return wsClientFrame{op: op, payload: payload}, end, nil
}
