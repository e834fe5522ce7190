package origin

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// Fuzz targets of what the origin sends: any bytes either are refused or
// read one consistent way, never a panic. `go test` runs their seeds;
// `go test -fuzz FuzzReadHead ./server/gateway/origin/` explores.

// readConn is a net.Conn reading from a fixed buffer; deadlines are no-ops.
type readConn struct {
	net.Conn // nil: only Read, Close and the deadlines are called
	r        io.Reader
}

func (c *readConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c *readConn) Close() error                     { return nil }
func (c *readConn) SetReadDeadline(time.Time) error  { return nil }
func (c *readConn) SetWriteDeadline(time.Time) error { return nil }
func (c *readConn) SetDeadline(time.Time) error      { return nil }

var headSeeds = []string{
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
	"HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 7\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
	"HTTP/1.0 204 No Content\r\nConnection: keep-alive\r\n\r\n",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
	"HTTP/1.1 200 OK\r\nX-A: a\rX-B: b\r\n\r\n",
	"HTTP/1.1 200 OK\r\nX-A: a\r\n folded\r\n\r\n",
	"HTTP/1.1 999 \r\nContent-Length : 1\r\n\r\n",
	"HTTP/2 200 OK\r\n\r\n",
	"HTTP/1.0 100 \r\nTrAnsfer-EnCoding:\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: ,\r\nContent-Length: 2\r\n\r\nok",
	"",
}

// FuzzReadHead: a head read is one framing only (never Content-Length
// beside Transfer-Encoding, never a negative length), its status 100 to
// 999, its fields free of control characters, and reading it again gives
// the same.
func FuzzReadHead(f *testing.F) {
	for _, s := range headSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		h, err := readHead(bufio.NewReaderSize(bytes.NewReader(raw), 16), responseHeaderLimit)
		if err != nil {
			return // refused: every caller reads the error first
		}
		if h.status < 100 || h.status > 999 {
			t.Fatalf("status %d", h.status)
		}
		if h.length < -1 {
			t.Fatalf("length %d", h.length)
		}
		var lengths, codings int
		for _, fl := range h.fields {
			switch {
			case bytes.EqualFold(fl.name, []byte("Content-Length")):
				lengths++
			case bytes.EqualFold(fl.name, []byte("Transfer-Encoding")):
				codings++
			}
			if len(fl.name) == 0 || bytes.ContainsAny(fl.value, "\r\n\x00") || bytes.ContainsAny(fl.name, "\r\n\x00 :") {
				t.Fatalf("field %q: %q", fl.name, fl.value)
			}
		}
		// A Transfer-Encoding is exactly chunked, never beside a length.
		switch {
		case codings > 0 && !h.chunked:
			t.Fatal("a Transfer-Encoding other than chunked accepted")
		case h.chunked && (lengths > 0 || h.length >= 0):
			t.Fatal("Content-Length and chunked both accepted")
		case lengths > 0 && h.length < 0, lengths == 0 && h.length >= 0:
			t.Fatalf("%d Content-Length fields, length %d", lengths, h.length)
		case h.chunked && codings == 0:
			t.Fatal("chunked with no Transfer-Encoding")
		}
		switch k := h.body(false); {
		case k == bodyLength && h.length < 0, k == bodyChunked && !h.chunked:
			t.Fatalf("body kind %v, length %d, chunked %v", k, h.length, h.chunked)
		}
		if h.body(true) != bodyNone {
			t.Fatal("an answer to HEAD with a body")
		}
		again, err := readHead(bufio.NewReader(bytes.NewReader(raw)), responseHeaderLimit)
		if err != nil || again.status != h.status || again.length != h.length || again.chunked != h.chunked ||
			again.close != h.close || len(again.fields) != len(h.fields) {
			t.Fatalf("read again: %+v, %v; first %+v", again, err, h)
		}
	})
}

// decodeChunked reads raw as a chunked body, n bytes at a time.
func decodeChunked(raw []byte, n int) ([]byte, error) {
	r := bytes.NewReader(raw)
	b := &originBody{c: &originConn{Conn: &readConn{r: r}, br: bufio.NewReaderSize(r, 16)}, kind: bodyChunked, idle: time.Second}
	var out []byte
	buf := make([]byte, n)
	for {
		k, err := b.Read(buf)
		out = append(out, buf[:k]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// FuzzChunked: a chunked body decodes the same whatever the reads' size,
// never to more bytes than it holds; one that ends cleanly re-encodes and
// decodes to the same bytes; a cut one is io.ErrUnexpectedEOF or
// malformed, never a clean end.
func FuzzChunked(f *testing.F) {
	for _, s := range []string{
		"4\r\nwiki\r\n5;ext=1\r\npedia\r\n0\r\n\r\n",
		"4\r\nwiki\r\n0\r\nX-Trailer: 1\r\n\r\n",
		"4\r\nwiki\r\n",
		"4\r\nwikiXX0\r\n\r\n",
		"zz\r\nwiki\r\n0\r\n\r\n",
		"4\nwiki\r\n0\r\n\r\n",
		"ffffffffffffffff\r\n",
		"-1\r\n\r\n",
		"0\r\n\r\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		whole, err := decodeChunked(raw, 64<<10)
		bytewise, err1 := decodeChunked(raw, 1)
		if !bytes.Equal(whole, bytewise) || (err == nil) != (err1 == nil) {
			t.Fatalf("read whole %q, %v; byte by byte %q, %v", whole, err, bytewise, err1)
		}
		if len(whole) > len(raw) {
			t.Fatalf("%d bytes out of %d", len(whole), len(raw))
		}
		if err != nil {
			if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, errMalformed) {
				t.Fatalf("error %v, want a cut or malformed body", err)
			}
			return
		}
		var enc bytes.Buffer
		bw := bufio.NewWriter(&enc)
		_, _ = (&chunkWriter{w: bw}).Write(whole)
		bw.WriteString("0\r\n\r\n")
		bw.Flush()
		back, err := decodeChunked(enc.Bytes(), 7)
		if err != nil || !bytes.Equal(back, whole) {
			t.Fatalf("re-encoded %q decodes to %q, %v", whole, back, err)
		}
	})
}

// FuzzUpgrade: the final answer to a request asks for a switch or not:
// a 101 only when one was asked for, 1xx interim answers skipped; a 101
// joins only with Upgrade: websocket, Connection: upgrade and the
// handshake's accept key; the 101 the visitor gets reads back as a plain
// switch, with no framing of its own.
func FuzzUpgrade(f *testing.F) {
	const key = "dGhlIHNhbXBsZSBub25jZQ=="
	accept := acceptKey(key)
	for _, s := range []string{
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + accept + "\r\n\r\n",
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: x\r\n\r\n",
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\nSec-WebSocket-Accept: " + accept + "\r\nSet-Cookie: wr_session_a=1\r\nSet-Cookie: app=2\r\nContent-Length: 3\r\n\r\n",
		"HTTP/1.1 403 Forbidden\r\nContent-Length: 2\r\n\r\nno",
		"HTTP/1.1 101 Switching Protocols\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n",
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	own := func(name []byte) bool { return bytes.HasPrefix(name, []byte("wr_")) }
	f.Fuzz(func(t *testing.T, raw []byte, upgrade bool) {
		head, err := finalHead(bufio.NewReaderSize(bytes.NewReader(raw), 16), upgrade)
		if err != nil {
			return
		}
		switch {
		case head.status == 101 && !upgrade:
			t.Fatal("a 101 to a request that asked for no switch")
		case head.status < 200 && head.status != 101:
			t.Fatalf("interim %d as the final answer", head.status)
		case head.status != 101:
			return
		}
		if !switched(head, key) {
			return
		}
		if !bytes.EqualFold(head.get("Upgrade"), []byte("websocket")) || string(head.get("Sec-WebSocket-Accept")) != accept {
			t.Fatalf("joined on Upgrade %q, accept %q", head.get("Upgrade"), head.get("Sec-WebSocket-Accept"))
		}
		reply := switchReply(head, own, []byte("req-1"))
		back, err := readHead(bufio.NewReader(bytes.NewReader(reply)), responseHeaderLimit)
		if err != nil {
			t.Fatalf("the visitor's 101 %q: %v", reply, err)
		}
		if back.status != 101 || back.length >= 0 || back.chunked || !back.hasToken("Connection", "upgrade") ||
			!bytes.Equal(back.get("Upgrade"), []byte("websocket")) || string(back.get("X-Request-Id")) != "req-1" {
			t.Fatalf("the visitor's 101 %q read as %+v", reply, back)
		}
		for _, fl := range back.fields {
			if bytes.EqualFold(fl.name, []byte("Set-Cookie")) && own(cookieName(fl.value)) {
				t.Fatalf("the waiting room's cookie set by the origin: %q", fl.value)
			}
		}
	})
}
