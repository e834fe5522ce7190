package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"syscall"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// The HTTP protocol's edge, below Fiber.
//
// guardProtocol puts a filter in front of an app's fasthttp handler: it
// runs on every request fasthttp has parsed, before any Fiber middleware or
// handler, and refuses three kinds of request in the contract's JSON:
//
//   - a body with Content-Encoding (anything but "identity"): 415
//     unsupported_encoding. Fiber's Ctx.Body() inflates gzip, deflate and
//     brotli, stacked ("gzip, gzip") and without a cap, while the body limit
//     counts the compressed bytes: 600 bytes can become 256 MiB. No client
//     of this API compresses its small JSON bodies, so the server never
//     inflates anything (decodeJSON also reads the raw body). The compressed
//     body was read within WR_BODY_LIMIT with sound framing, so the
//     connection stays open;
//   - Content-Length together with Transfer-Encoding: 400 invalid_request
//     and the connection closed (RFC 9112 §6.1: the framing is ambiguous,
//     which is how requests are smuggled past a proxy; whatever follows on
//     the connection is never answered). fasthttp silently prefers chunked
//     and drops the Content-Length, so the raw header lines are read;
//   - a method Fiber does not know (also a lowercase "get": methods are
//     case-sensitive): 400 invalid_request. RFC 9110 suggests 501, but a
//     5xx any client can cause at will would page operators for nothing, and
//     such a request is the client's mistake.
//
// Errors fasthttp's parser reports itself (duplicate Content-Length, bad
// header names, oversized headers, timeouts) go through the app's
// ErrorHandler, which answers a fixed text per status (errors.go): the
// parser's messages quote the raw request, cookies and Authorization
// included. SecureErrorLogMessage keeps them out of the errors too.
//
// The filter is installed on the fasthttp.Server right after fiber.New:
// Fiber sets Server.Handler only in New (App.init), never at Listener or
// Serve time.
func (s *Server) guardProtocol(app *fiber.App) {
	refused := protocolRefusedMetric(s.m.reg)
	srv := app.Server()
	srv.SecureErrorLogMessage = true
	next := srv.Handler
	srv.Handler = func(ctx *fasthttp.RequestCtx) {
		if r := checkProtocol(&ctx.Request.Header); r != nil {
			refused.WithLabelValues(r.reason).Inc()
			r.write(ctx)
			return
		}
		next(ctx)
	}
}

// protocolRefusedMetric returns waitingroom_protocol_refused_total,
// registering it on reg unless it already is (the public and the management
// app share it).
func protocolRefusedMetric(reg *prometheus.Registry) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "waitingroom_protocol_refused_total",
		Help: "Requests refused at the HTTP protocol's edge before any handler, by reason (content_encoding, length_and_chunked, method).",
	}, []string{"reason"})
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			return are.ExistingCollector.(*prometheus.CounterVec)
		}
		panic("server: registering waitingroom_protocol_refused_total: " + err.Error())
	}
	return c
}

// protocolRefusal is one answer of the filter, encoded once.
type protocolRefusal struct {
	reason string // metric label
	status int
	body   []byte
	close  bool // close the connection after the answer
}

func newRefusal(reason string, status int, code, message string, close bool) *protocolRefusal {
	body, _ := json.Marshal(map[string]string{"error": code, "message": message})
	return &protocolRefusal{reason: reason, status: status, body: body, close: close}
}

var (
	refuseEncoding = newRefusal("content_encoding", fiber.StatusUnsupportedMediaType, "unsupported_encoding",
		"request bodies must not be compressed: send them without Content-Encoding", false)
	refuseFraming = newRefusal("length_and_chunked", fiber.StatusBadRequest, "invalid_request",
		"a request must not carry both Content-Length and Transfer-Encoding", true)
	refuseMethod = newRefusal("method", fiber.StatusBadRequest, "invalid_request",
		"unsupported request method", false)
)

func (r *protocolRefusal) write(ctx *fasthttp.RequestCtx) {
	ctx.Response.Reset()
	ctx.SetStatusCode(r.status)
	ctx.SetContentType(fiber.MIMEApplicationJSON)
	ctx.Response.Header.Set(fiber.HeaderCacheControl, "no-store")
	ctx.Response.Header.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	ctx.SetBody(r.body)
	if r.close {
		ctx.SetConnectionClose()
	}
}

// checkProtocol returns the refusal for a request the filter refuses, nil
// for any other.
func checkProtocol(h *fasthttp.RequestHeader) *protocolRefusal {
	if !knownMethod(h.Method()) {
		return refuseMethod
	}
	var length, chunked bool
	raw := h.RawHeaders()
	for len(raw) > 0 {
		var line []byte
		line, raw, _ = bytes.Cut(raw, []byte{'\n'})
		key, value, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue // a folded value's continuation
		}
		switch {
		case bytes.EqualFold(key, []byte(fiber.HeaderContentLength)):
			length = true
		case bytes.EqualFold(key, []byte(fiber.HeaderTransferEncoding)):
			chunked = true
		case bytes.EqualFold(key, []byte(fiber.HeaderContentEncoding)):
			if !identityOnly(value) {
				return refuseEncoding
			}
		}
	}
	if length && chunked {
		return refuseFraming
	}
	return nil
}

// identityOnly reports whether a Content-Encoding value names no coding
// but "identity" (an empty value names none).
func identityOnly(v []byte) bool {
	for len(v) > 0 {
		var coding []byte
		coding, v, _ = bytes.Cut(v, []byte{','})
		coding = bytes.TrimSpace(coding)
		if len(coding) > 0 && !bytes.EqualFold(coding, []byte("identity")) {
			return false
		}
	}
	return true
}

// knownMethod reports whether m is one of Fiber's methods (fiber.DefaultMethods).
func knownMethod(m []byte) bool {
	switch string(m) {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodPost, fiber.MethodPut, fiber.MethodDelete,
		fiber.MethodConnect, fiber.MethodOptions, fiber.MethodTrace, fiber.MethodPatch:
		return true
	}
	return false
}

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

// guardHeaderLines returns ln with its connections guarded (see headerGuardConn).
func guardHeaderLines(ln net.Listener) net.Listener { return headerGuardListener{ln} }

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
func (g *headerGuardConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := g.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.New("not a socket")
}
