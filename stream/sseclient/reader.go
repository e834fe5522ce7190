package sseclient

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"time"
	"unicode/utf8"
)

// MaxLine bounds what one stream can make a Reader hold: a line longer than
// MaxLine bytes fails with ErrLineTooLong, and an event whose data buffer
// (each data value plus a line feed) would exceed MaxLine bytes fails with
// ErrEventTooLarge.
const MaxLine = 1 << 20

// bufSize is the read buffer: small, because a load generator holds
// thousands of Readers and push events are a few hundred bytes.
const bufSize = 4 << 10

// keepCap is the largest line or data buffer kept for reuse after an event;
// a larger one (a rare big event) is released to the garbage collector.
const keepCap = 64 << 10

// Errors that end a stream (Next returns them from then on).
var (
	ErrLineTooLong   = errors.New("sse: line longer than MaxLine")
	ErrEventTooLarge = errors.New("sse: event data longer than MaxLine")
)

// Event is one dispatched event.
type Event struct {
	// Type is the event field's value, "message" when the block had none.
	Type string
	// Data is the data lines' values joined by line feeds.
	Data string
	// ID is the stream's last event ID at dispatch: set by the latest id
	// field of this or an earlier block ("" once reset by an empty id).
	ID string
	// Retry is the reconnection time that a retry field in this event's
	// block set; 0 when the block had none.
	Retry time.Duration
}

// Reader parses an event stream. Create one with NewReader.
type Reader struct {
	br      *bufio.Reader
	started bool // the leading BOM has been looked for
	skipLF  bool // the last line ended in CR: a directly following LF is part of its line end
	err     error

	line []byte // the current line (reused)
	fix  []byte // the current line with invalid UTF-8 replaced (reused)

	// The standard's buffers.
	data      []byte
	eventType string
	idBuf     string
	lastType  string // the last event field's value, reused while it repeats

	lastID     string        // the last event ID string, updated at each blank line
	retry      time.Duration // the reconnection time
	retrySet   bool          // a retry field was seen
	blockRetry time.Duration // retry set in the current block
	comments   int
}

// NewReader returns a Reader of the event stream r. It buffers r in 4 KiB;
// an r that is already a *bufio.Reader of at least that size is used as is.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, bufSize)}
}

// Next returns the next dispatched event. Comment lines are skipped (and
// counted, see Comments), blocks with empty data dispatch nothing. At the
// end of the stream it returns io.EOF — also when the stream ended inside a
// block, which is then discarded, as the standard says. Any other error of
// the underlying reader is returned as is. After an error, Next returns the
// same error again.
func (r *Reader) Next() (Event, error) {
	for r.err == nil {
		line, err := r.readLine()
		if err != nil {
			r.err = err
			break
		}
		if len(line) == 0 {
			if ev, ok := r.dispatch(); ok {
				return ev, nil
			}
			continue
		}
		r.err = r.processLine(line)
	}
	return Event{}, r.err
}

// Comments is how many comment lines (such as heartbeats) the stream has had
// so far.
func (r *Reader) Comments() int { return r.comments }

// LastEventID is the stream's last event ID as of the last blank line: what
// a client sends as Last-Event-ID when it reconnects ("" sends none).
func (r *Reader) LastEventID() string { return r.lastID }

// Retry is the reconnection time the stream last asked for with a retry
// field — also in a block that dispatched nothing, such as a shutdown
// notice — and whether it asked at all.
func (r *Reader) Retry() (time.Duration, bool) { return r.retry, r.retrySet }

// readLine returns the next line without its end. The slice is valid until
// the next call. A line that the stream ends before its line end is
// discarded: the error (io.EOF) is returned instead.
func (r *Reader) readLine() ([]byte, error) {
	if !r.started {
		r.started = true
		if b, err := r.br.Peek(1); err == nil && b[0] == 0xEF {
			if b, _ := r.br.Peek(3); string(b) == "\uFEFF" {
				r.br.Discard(3)
			}
		}
	}
	if cap(r.line) > keepCap {
		r.line = nil
	}
	r.line = r.line[:0]
	for {
		if r.br.Buffered() == 0 {
			if _, err := r.br.Peek(1); err != nil {
				return nil, err
			}
		}
		buf, _ := r.br.Peek(r.br.Buffered())
		if r.skipLF {
			r.skipLF = false
			if buf[0] == '\n' {
				r.br.Discard(1)
				continue
			}
		}
		i := indexLineEnd(buf)
		if i < 0 {
			if len(r.line)+len(buf) > MaxLine {
				return nil, ErrLineTooLong
			}
			r.line = append(r.line, buf...)
			r.br.Discard(len(buf))
			continue
		}
		if len(r.line)+i > MaxLine {
			return nil, ErrLineTooLong
		}
		r.line = append(r.line, buf[:i]...)
		r.skipLF = buf[i] == '\r'
		r.br.Discard(i + 1)
		if utf8.Valid(r.line) {
			return r.line, nil
		}
		if cap(r.fix) > keepCap {
			r.fix = nil
		}
		r.fix = appendUTF8(r.fix[:0], r.line)
		return r.fix, nil
	}
}

// indexLineEnd is the index of the first CR or LF in b, or -1.
func indexLineEnd(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		i = len(b)
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		return j
	}
	if i == len(b) {
		return -1
	}
	return i
}

// processLine interprets one non-empty line.
func (r *Reader) processLine(line []byte) error {
	if line[0] == ':' {
		r.comments++
		return nil
	}
	field, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		field, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(field) {
	case "event":
		if string(value) != r.lastType { // a stream repeats its few types: allocate each once
			r.lastType = string(value)
		}
		r.eventType = r.lastType
	case "data":
		if len(r.data)+len(value)+1 > MaxLine {
			return ErrEventTooLarge
		}
		r.data = append(r.data, value...)
		r.data = append(r.data, '\n')
	case "id":
		if bytes.IndexByte(value, 0) < 0 && string(value) != r.idBuf {
			r.idBuf = string(value)
		}
	case "retry":
		if d, ok := parseRetry(value); ok {
			r.retry, r.retrySet, r.blockRetry = d, true, d
		}
	}
	return nil
}

// dispatch ends a block (a blank line): it returns the event, or false when
// the data buffer is empty.
func (r *Reader) dispatch() (Event, bool) {
	r.lastID = r.idBuf
	typ, retry := r.eventType, r.blockRetry
	r.eventType, r.blockRetry = "", 0
	if len(r.data) == 0 {
		return Event{}, false
	}
	if typ == "" {
		typ = "message"
	}
	// Every data line appended a line feed: the last one is removed.
	ev := Event{Type: typ, Data: string(r.data[:len(r.data)-1]), ID: r.lastID, Retry: retry}
	if cap(r.data) > keepCap {
		r.data = nil
	}
	r.data = r.data[:0]
	return ev, true
}

// parseRetry reads a retry value: milliseconds, ASCII digits only (no sign,
// no space, not empty). A value too large for a time.Duration saturates.
func parseRetry(v []byte) (time.Duration, bool) {
	const maxMs = math.MaxInt64 / int64(time.Millisecond)
	if len(v) == 0 {
		return 0, false
	}
	var ms int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		if ms <= maxMs {
			ms = ms*10 + int64(c-'0')
		}
	}
	if ms > maxMs {
		return math.MaxInt64, true
	}
	return time.Duration(ms) * time.Millisecond, true
}

// appendUTF8 appends b to dst with every maximal subpart of an invalid UTF-8
// sequence replaced by one U+FFFD, as the Encoding Standard's UTF-8 decoder
// does (Go's own conversions replace byte by byte, which differs for a
// truncated sequence such as E2 82).
func appendUTF8(dst, b []byte) []byte {
	for len(b) > 0 {
		c, n := utf8.DecodeRune(b)
		if c == utf8.RuneError && n == 1 {
			n = invalidLen(b)
			dst = append(dst, "\uFFFD"...)
		} else {
			dst = append(dst, b[:n]...)
		}
		b = b[n:]
	}
	return dst
}

// invalidLen is the length of the invalid sequence at the start of b: a lead
// byte and the continuation bytes that could still have completed it (at
// least 1).
func invalidLen(b []byte) int {
	need, lo, hi := 0, byte(0x80), byte(0xBF)
	switch c := b[0]; {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c >= 0xE0 && c <= 0xEF:
		need = 2
		if c == 0xE0 {
			lo = 0xA0
		} else if c == 0xED {
			hi = 0x9F
		}
	case c >= 0xF0 && c <= 0xF4:
		need = 3
		if c == 0xF0 {
			lo = 0x90
		} else if c == 0xF4 {
			hi = 0x8F
		}
	default:
		return 1
	}
	n := 1
	for n <= need && n < len(b) && b[n] >= lo && b[n] <= hi {
		n++
		lo, hi = 0x80, 0xBF
	}
	return n
}
