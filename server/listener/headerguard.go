package listener

import (
	"bytes"
	"errors"
	"net"
	"syscall"
)

// A last header line without a colon ("X-Foo\r\n\r\n") is a malformed
// request, but fasthttp v1.52's header scanner takes it for an unfinished
// one (it looks for a colon, finds none, and asks for more bytes), so the
// client waited ReadTimeout (10 s) for a 408 while holding a connection.
// A line without a colon followed by one with a colon is refused at once;
// only the last line is affected. fasthttp offers no hook before it reads
// the headers, so the fix sits below it, on the connection:
//
// headerGuardConn follows the lines it delivers to fasthttp. When fasthttp
// asks for more bytes while everything delivered so far ends with a
// request's header block (a first line ending in " HTTP/1.x", then header
// lines, then the empty line) whose last header line has no colon, it can
// only be stuck on that line: the read fails at once with
// errHeaderLineNoColon, and fasthttp answers 400 (the ErrorHandler's fixed
// text) and closes the connection. Any other read passes through untouched.
// A request body or WebSocket frames would have to end with the very same
// shape (a line ending in " HTTP/1.x" included) to trip it, and then only
// their own connection is closed. The cost is a scan of each read's bytes
// for newlines and colons, and a few dozen bytes per connection.

// errHeaderLineNoColon fails the read fasthttp would wait on forever.
var errHeaderLineNoColon = errors.New("request header line without a colon")

// headerGuardListener wraps each accepted connection in a headerGuardConn.
type headerGuardListener struct{ net.Listener }

// GuardHeaderLines returns ln with its connections guarded (see
// headerGuardConn); NewPublic applies it itself.
func GuardHeaderLines(ln net.Listener) net.Listener { return headerGuardListener{ln} }

func (l headerGuardListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &headerGuardConn{Conn: c}, nil
}

// headerGuardConn: see errHeaderLineNoColon.
type headerGuardConn struct {
	net.Conn
	cur   lineState // the line being delivered (no newline yet)
	block blockState
	ended blockState // the block the last empty line ended
	blank bool       // the last complete line was empty
}

// lineState describes a line as its bytes arrive.
type lineState struct {
	n     int      // bytes so far
	colon bool     // holds a ':'
	fold  bool     // starts with a space or tab: a folded value's continuation
	tail  [10]byte // the line's last bytes: " HTTP/1.1\r" at most
	tailN int      // valid bytes at the end of tail
}

// blockState describes the lines since the last empty line.
type blockState struct {
	lines     int
	request   bool // the first line ends with " HTTP/1.0" or " HTTP/1.1"
	lastColon bool
	lastFold  bool
}

func (l *lineState) add(b []byte) {
	if len(b) == 0 {
		return
	}
	if l.n == 0 {
		l.fold = b[0] == ' ' || b[0] == '\t'
	}
	l.n += len(b)
	if !l.colon && bytes.IndexByte(b, ':') >= 0 {
		l.colon = true
	}
	if len(b) >= len(l.tail) {
		copy(l.tail[:], b[len(b)-len(l.tail):])
		l.tailN = len(l.tail)
		return
	}
	keep := min(l.tailN, len(l.tail)-len(b))
	copy(l.tail[len(l.tail)-len(b)-keep:], l.tail[len(l.tail)-keep:])
	copy(l.tail[len(l.tail)-len(b):], b)
	l.tailN = keep + len(b)
}

// empty reports whether the line is empty (a lone CR counts as empty).
func (l *lineState) empty() bool {
	return l.n == 0 || (l.n == 1 && l.tailN > 0 && l.tail[len(l.tail)-1] == '\r')
}

// endsWithVersion reports whether the line ends with " HTTP/1.0" or " HTTP/1.1" (CR aside).
func (l *lineState) endsWithVersion() bool {
	t := l.tail[len(l.tail)-l.tailN:]
	t = bytes.TrimSuffix(t, []byte{'\r'})
	return bytes.HasSuffix(t, []byte(" HTTP/1.1")) || bytes.HasSuffix(t, []byte(" HTTP/1.0"))
}

func (g *headerGuardConn) scan(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			g.cur.add(b)
			return
		}
		g.cur.add(b[:i])
		b = b[i+1:]
		if g.cur.empty() {
			g.ended, g.block, g.blank = g.block, blockState{}, true
		} else {
			if g.block.lines == 0 {
				g.block.request = g.cur.endsWithVersion()
			}
			g.block.lines++
			g.block.lastColon, g.block.lastFold = g.cur.colon, g.cur.fold
			g.blank = false
		}
		g.cur = lineState{}
	}
}

// stuck reports whether fasthttp, asking for more, can only be waiting on
// a header block whose last line has no colon.
func (g *headerGuardConn) stuck() bool {
	return g.cur.n == 0 && g.blank && g.ended.request && g.ended.lines >= 2 && !g.ended.lastColon && !g.ended.lastFold
}

func (g *headerGuardConn) Read(p []byte) (int, error) {
	if g.stuck() {
		return 0, errHeaderLineNoColon
	}
	n, err := g.Conn.Read(p)
	g.scan(p[:n])
	return n, err
}

// SyscallConn exposes the socket (the streams' liveness peek uses it).
func (g *headerGuardConn) SyscallConn() (syscall.RawConn, error) { return rawConn(g.Conn) }
