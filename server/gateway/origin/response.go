package origin

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// The origin's answers, read strictly (RFC 9112): the gateway re-frames
// every answer for the visitor, so anything two parsers could read two
// ways is refused (502) rather than guessed at.

// originHead is an origin's status line and header fields.
type originHead struct {
	status  int
	reason  []byte
	http11  bool
	fields  []field
	length  int64 // Content-Length; -1: none
	chunked bool  // Transfer-Encoding: chunked
	close   bool  // the origin closes the connection after this answer
}

type field struct{ name, value []byte }

// get returns the first value of a field, or nil.
func (h *originHead) get(name string) []byte {
	for _, f := range h.fields {
		if bytes.EqualFold(f.name, []byte(name)) {
			return f.value
		}
	}
	return nil
}

// hasToken reports whether a comma-separated field lists token.
func (h *originHead) hasToken(name, token string) bool {
	for _, f := range h.fields {
		if bytes.EqualFold(f.name, []byte(name)) {
			for _, t := range bytes.Split(f.value, []byte{','}) {
				if bytes.EqualFold(bytes.TrimSpace(t), []byte(token)) {
					return true
				}
			}
		}
	}
	return false
}

// errNothingRead: the connection ended before the first byte of an answer
// (an idle connection the origin closed: the request may be retried).
var errNothingRead = errors.New("the origin closed the connection before answering")

// errMalformed wraps everything the parser refuses.
var errMalformed = errors.New("malformed answer")

func malformed(what string) error { return fmt.Errorf("%w: %s", errMalformed, what) }

// readHead reads one answer's head, at most limit bytes.
func readHead(br *bufio.Reader, limit int) (*originHead, error) {
	var buf []byte
	line := func() ([]byte, error) {
		buf = buf[:0]
		for {
			chunk, err := br.ReadSlice('\n')
			if len(buf)+len(chunk) > limit {
				return nil, malformed("headers too large")
			}
			limit -= len(chunk)
			buf = append(buf, chunk...)
			switch {
			case err == nil:
				if len(buf) < 2 || buf[len(buf)-2] != '\r' {
					return nil, malformed("a line not ended by CRLF")
				}
				return buf[:len(buf)-2], nil
			case errors.Is(err, bufio.ErrBufferFull):
				continue
			}
			return nil, err
		}
	}
	first, err := line()
	if err != nil {
		if len(buf) == 0 && (errors.Is(err, io.EOF) || isReset(err)) {
			return nil, errNothingRead
		}
		return nil, err
	}
	h := &originHead{length: -1}
	if err := h.parseStatus(first); err != nil {
		return nil, err
	}
	for {
		l, err := line()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, malformed("cut short in its headers")
			}
			return nil, err
		}
		if len(l) == 0 {
			break
		}
		if err := h.addField(l); err != nil {
			return nil, err
		}
	}
	return h, h.framing()
}

func (h *originHead) parseStatus(l []byte) error {
	switch {
	case bytes.HasPrefix(l, []byte("HTTP/1.1 ")):
		h.http11 = true
	case bytes.HasPrefix(l, []byte("HTTP/1.0 ")):
	default:
		return malformed("no HTTP/1.x status line")
	}
	l = l[len("HTTP/1.1 "):]
	if len(l) < 3 || (len(l) > 3 && l[3] != ' ') {
		return malformed("bad status code")
	}
	code := 0
	for _, c := range l[:3] {
		if c < '0' || c > '9' {
			return malformed("bad status code")
		}
		code = code*10 + int(c-'0')
	}
	if code < 100 {
		return malformed("bad status code")
	}
	h.status = code
	if len(l) > 3 {
		h.reason = append([]byte(nil), l[4:]...)
		for _, c := range h.reason {
			if c < ' ' && c != '\t' || c == 0x7f {
				return malformed("a control character in the status line")
			}
		}
	}
	return nil
}

func (h *originHead) addField(l []byte) error {
	if l[0] == ' ' || l[0] == '\t' {
		return malformed("a folded header line")
	}
	name, value, ok := bytes.Cut(l, []byte{':'})
	if !ok || len(name) == 0 {
		return malformed("a header line without a name")
	}
	for _, c := range name {
		if !IsTokenChar(c) {
			return malformed("a bad header name")
		}
	}
	value = bytes.Trim(value, " \t")
	for _, c := range value {
		if c < ' ' && c != '\t' || c == 0x7f {
			return malformed("a control character in a header value") // a bare CR, a NUL
		}
	}
	h.fields = append(h.fields, field{append([]byte(nil), name...), append([]byte(nil), value...)})
	return nil
}

// framing reads how the body is delimited: two different lengths, a
// length beside Transfer-Encoding, or a Transfer-Encoding other than
// exactly chunked (an empty one included: read as no coding it would let
// the length frame what another reader takes for chunks) are refused.
func (h *originHead) framing() error {
	var codings int
	te := false
	for _, f := range h.fields {
		switch {
		case bytes.EqualFold(f.name, []byte("Content-Length")):
			for _, v := range bytes.Split(f.value, []byte{','}) {
				n, err := parseLength(bytes.TrimSpace(v))
				if err != nil || (h.length >= 0 && n != h.length) {
					return malformed("conflicting or bad Content-Length")
				}
				h.length = n
			}
		case bytes.EqualFold(f.name, []byte("Transfer-Encoding")):
			te = true
			for _, v := range bytes.Split(f.value, []byte{','}) {
				if v = bytes.TrimSpace(v); len(v) > 0 {
					codings++
					h.chunked = bytes.EqualFold(v, []byte("chunked"))
				}
			}
		}
	}
	switch {
	case te && (codings != 1 || !h.chunked):
		return malformed("a transfer coding other than chunked")
	case te && h.length >= 0:
		return malformed("both Content-Length and Transfer-Encoding")
	}
	h.close = !h.http11 || h.hasToken("Connection", "close")
	return nil
}

func parseLength(v []byte) (int64, error) {
	if len(v) == 0 || len(v) > 18 {
		return 0, errMalformed
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, errMalformed
		}
		n = n*10 + int64(c-'0')
	}
	return n, nil
}

// IsTokenChar reports whether c may be in an RFC 9110 token (a method,
// a header name, a transfer coding).
func IsTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), c) >= 0
}

// bodyKind is how an answer's body ends.
type bodyKind int

const (
	bodyNone    bodyKind = iota // HEAD, 1xx, 204, 304
	bodyLength                  // Content-Length bytes
	bodyChunked                 // chunked
	bodyClose                   // until the origin closes
)

func (h *originHead) body(head bool) bodyKind {
	switch {
	case head || h.status < 200 || h.status == 204 || h.status == 304:
		return bodyNone
	case h.chunked:
		return bodyChunked
	case h.length >= 0:
		return bodyLength
	}
	return bodyClose
}

// chunkLineLimit bounds a chunk's size line and the trailer section.
const chunkLineLimit = 4 << 10

// originBody streams an answer's body from the origin's connection: each
// read waits at most idle for the origin's next bytes; at the body's end
// the connection goes back to the pool when it can be reused. Its
// memory is the connection's read buffer, whatever the body's size.
type originBody struct {
	u     *Client
	c     *originConn
	kind  bodyKind
	left  int64 // bodyLength: bytes left; bodyChunked: left in this chunk
	idle  time.Duration
	reuse bool
	err   error // sticky: io.EOF at the end
}

func (b *originBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.read(p)
	if err != nil {
		b.err = err
	}
	return n, err
}

func (b *originBody) read(p []byte) (int, error) {
	_ = b.c.SetReadDeadline(time.Now().Add(b.idle))
	switch b.kind {
	case bodyLength:
		if b.left == 0 {
			return 0, io.EOF
		}
		n, err := b.take(p)
		if err == nil && b.left == 0 {
			err = io.EOF
		}
		return n, err
	case bodyChunked:
		if b.left == 0 {
			size, err := readChunkSize(b.c.br)
			if err != nil {
				return 0, err
			}
			if size == 0 {
				return 0, readTrailers(b.c.br)
			}
			b.left = size
		}
		n, err := b.take(p)
		if err == nil && b.left == 0 {
			err = readCRLF(b.c.br)
		}
		return n, err
	}
	return b.c.br.Read(p) // bodyClose: io.EOF is the end
}

// take reads into p at most the b.left bytes still announced; the origin
// closing before them is io.ErrUnexpectedEOF.
func (b *originBody) take(p []byte) (int, error) {
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.c.br.Read(p)
	b.left -= int64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// Close ends the body: a connection whose answer was read whole goes back
// to the pool; any other is closed.
func (b *originBody) Close() error {
	if b.c == nil {
		return nil
	}
	if b.err == io.EOF && b.reuse && b.kind != bodyClose {
		b.u.put(b.c)
	} else {
		b.c.Close()
	}
	b.c = nil
	return nil
}

func readChunkSize(br *bufio.Reader) (int64, error) {
	l, err := br.ReadSlice('\n')
	switch {
	case errors.Is(err, io.EOF):
		return 0, io.ErrUnexpectedEOF
	case err != nil:
		return 0, malformed("a bad chunk size line")
	case len(l) < 2 || l[len(l)-2] != '\r':
		return 0, malformed("a chunk size line not ended by CRLF")
	}
	l = l[:len(l)-2]
	if i := bytes.IndexByte(l, ';'); i >= 0 {
		l = l[:i] // extensions are ignored
	}
	l = bytes.TrimRight(l, " \t")
	if len(l) == 0 || len(l) > 15 {
		return 0, malformed("a bad chunk size")
	}
	n, err := strconv.ParseInt(string(l), 16, 64)
	if err != nil || n < 0 {
		return 0, malformed("a bad chunk size")
	}
	return n, nil
}

func readCRLF(br *bufio.Reader) error {
	var b [2]byte
	if _, err := io.ReadFull(br, b[:]); err != nil {
		return io.ErrUnexpectedEOF
	}
	if b != [2]byte{'\r', '\n'} {
		return malformed("a chunk not ended by CRLF")
	}
	return nil
}

// readTrailers reads and drops the trailer section; io.EOF at its end.
func readTrailers(br *bufio.Reader) error {
	total := 0
	for {
		l, err := br.ReadSlice('\n')
		total += len(l)
		switch {
		case errors.Is(err, io.EOF):
			return io.ErrUnexpectedEOF
		case err != nil || total > chunkLineLimit:
			return malformed("trailers too large")
		case len(l) < 2 || l[len(l)-2] != '\r':
			return malformed("a trailer line not ended by CRLF")
		case len(l) == 2:
			return io.EOF
		}
	}
}
