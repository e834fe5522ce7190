package origin

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
)

// TestReadHeadRefusesAmbiguousAnswers: what two parsers could read two
// ways is refused; what is plain is read.
func TestReadHeadRefusesAmbiguousAnswers(t *testing.T) {
	for _, tc := range []struct {
		raw      string
		ok       bool
		kind     bodyKind
		length   int64
		reusable bool
	}{
		{"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", true, bodyLength, 5, true},
		{"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", true, bodyLength, 5, true},
		{"HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\n", true, bodyLength, 5, true},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", true, bodyChunked, -1, true},
		{"HTTP/1.1 200 OK\r\n\r\n", true, bodyClose, -1, true},
		{"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n", true, bodyLength, 1, false},
		{"HTTP/1.1 204 No Content\r\n\r\n", true, bodyNone, -1, true},
		{"HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n", true, bodyNone, 9, true},
		{"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\n", true, bodyLength, 1, false},
		{"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", true, bodyLength, 0, true},

		{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 7\r\n\r\n", false, 0, 0, false},
		{"HTTP/1.1 200 OK\r\nContent-Length: 2, 7\r\n\r\n", false, 0, 0, false},
		{"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", false, 0, 0, false},
		{"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", false, 0, 0, false},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", false, 0, 0, false},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", false, 0, 0, false},
		// An empty coding list: no coding to one reader, a broken chunked
		// answer to another.
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding:\r\nContent-Length: 2\r\n\r\nok", false, 0, 0, false},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: ,\r\nContent-Length: 2\r\n\r\nok", false, 0, 0, false},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: \r\n\r\n", false, 0, 0, false},
		{"HTTP/1.1 200 OK\r\nX-A: a\rX-B: b\r\n\r\n", false, 0, 0, false},
		{"HTTP/1.1 200 OK\r\nX-A: a\x00\r\n\r\n", false, 0, 0, false},
		{"HTTP/1.1 200 OK\nContent-Length: 1\n\n", false, 0, 0, false},
		{"HTTP/1.1 200 OK\r\nX-A: a\r\n folded\r\n\r\n", false, 0, 0, false},
		{"HTTP/1.1 200 OK\r\nX A: a\r\n\r\n", false, 0, 0, false},
		{"HTTP/1.1 200 OK\r\nContent-Length : 1\r\n\r\n", false, 0, 0, false},
		{"HTTP/2 200 OK\r\n\r\n", false, 0, 0, false},
		{"HTTP/1.1 20 OK\r\n\r\n", false, 0, 0, false},
		{"HTTP/1.1 200 O\rK\r\n\r\n", false, 0, 0, false},
		{"NOT HTTP\r\n\r\n", false, 0, 0, false},
		{"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n", false, 0, 0, false},
		{"HTTP/1.1 200 OK\r\nX-Huge: " + strings.Repeat("h", responseHeaderLimit) + "\r\n\r\n", false, 0, 0, false},
	} {
		h, err := readHead(bufio.NewReaderSize(strings.NewReader(tc.raw), 512), responseHeaderLimit)
		if tc.ok != (err == nil) {
			t.Errorf("%.80q: err %v, want ok=%v", tc.raw, err, tc.ok)
			continue
		}
		if err != nil {
			continue
		}
		if got := h.body(false); got != tc.kind || h.length != tc.length || h.close == tc.reusable {
			t.Errorf("%q: kind %v length %d close %v; want %v %d reusable %v", tc.raw, got, h.length, h.close, tc.kind, tc.length, tc.reusable)
		}
	}
	if _, err := readHead(bufio.NewReader(strings.NewReader("")), 100); !errors.Is(err, errNothingRead) {
		t.Errorf("an empty connection: %v, want errNothingRead", err)
	}
}

// TestOriginBodyChunked: a chunked body is decoded, its trailers dropped,
// and a malformed or cut one is an error, never a clean end.
func TestOriginBodyChunked(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
		ok        bool
	}{
		{"4\r\nwiki\r\n5;ext=1\r\npedia\r\n0\r\n\r\n", "wikipedia", true},
		{"4\r\nwiki\r\n0\r\nX-Trailer: 1\r\n\r\n", "wiki", true},
		{"4\r\nwiki\r\n", "wiki", false},
		{"4\r\nwikiXX0\r\n\r\n", "wiki", false},
		{"zz\r\nwiki\r\n0\r\n\r\n", "", false},
		{"4\nwiki\r\n0\r\n\r\n", "", false},
		{"ffffffffffffffff\r\n", "", false},
	} {
		client, server := net.Pipe()
		go func() { _, _ = io.WriteString(server, tc.raw); server.Close() }()
		b := &originBody{c: &originConn{Conn: client, br: bufio.NewReader(client)}, kind: bodyChunked, idle: 1e9}
		got, err := io.ReadAll(b)
		client.Close()
		if string(got) != tc.want || (err == nil) != tc.ok {
			t.Errorf("%q: %q, %v; want %q ok=%v", tc.raw, got, err, tc.want, tc.ok)
		}
	}
}

// TestForwardedQuotes: Forwarded's values are tokens or quoted strings
// (RFC 7239 §4).
func TestForwardedQuotes(t *testing.T) {
	for _, tc := range []struct {
		f    Forwarded
		want string
	}{
		{Forwarded{Client: net.ParseIP("192.0.2.1"), Proto: "https", Host: "shop.example"}, `for=192.0.2.1;proto=https;host=shop.example`},
		{Forwarded{Client: net.ParseIP("2001:db8::1"), Proto: "http", Host: "[::1]:8080"}, `for="[2001:db8::1]";proto=http;host="[::1]:8080"`},
		{Forwarded{Client: net.ParseIP("192.0.2.1"), Proto: "http", Host: `a"b\c`}, `for=192.0.2.1;proto=http;host="a\"b\\c"`},
		{Forwarded{Client: net.ParseIP("192.0.2.1"), Proto: "http", Host: ""}, `for=192.0.2.1;proto=http;host=""`},
	} {
		if got := forwardedValue(tc.f); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.f, got, tc.want)
		}
	}
}
