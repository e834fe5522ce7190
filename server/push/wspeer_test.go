package push

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
)

// socketPair returns the two ends of a loopback TCP connection: the
// server's (accepted) and the client's.
func socketPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Close(); _ = client.Close() })
	return server, client
}

// clientFrame is a frame as a client sends it: masked, unless unmasked.
func clientFrame(b0 byte, payload []byte, unmasked bool) []byte {
	out := []byte{b0}
	m := byte(0x80)
	if unmasked {
		m = 0
	}
	switch n := len(payload); {
	case n < 126:
		out = append(out, m|byte(n))
	case n < 1<<16:
		out = append(out, m|126, byte(n>>8), byte(n))
	default:
		out = append(out, m|127)
		out = binary.BigEndian.AppendUint64(out, uint64(n))
	}
	if unmasked {
		return append(out, payload...)
	}
	key := []byte{0x12, 0x34, 0x56, 0x78}
	out = append(out, key...)
	for i, c := range payload {
		out = append(out, c^key[i&3])
	}
	return out
}

const pongWait = time.Hour // no test but one waits for a missed pong

// checkUntil runs the peer's check until done says it saw what the test
// waits for (the bytes written on loopback may arrive a moment later), at
// most 5 s; it returns the last verdict.
func checkUntil(t *testing.T, p *wsPeer, done func(wsVerdict) bool) wsVerdict {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		v := p.check(time.Now(), pongWait)
		if done(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("the check never saw it; last verdict %+v, partial %d bytes", v, len(p.partial))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWSPeerControlFrames(t *testing.T) {
	server, client := socketPair(t)
	start := time.Now().Add(-time.Minute)
	p := newWSPeer(server, start)
	if p.raw == nil {
		t.Fatal("no raw socket from a TCP connection")
	}
	if v := p.check(time.Now(), pongWait); v.end || len(v.pings) != 0 {
		t.Fatalf("a silent client: %+v", v)
	}
	// A pong is heard; a ping is answered with its payload; data frames
	// up to the limit are read and ignored, fragmented or not.
	var msg []byte
	msg = append(msg, clientFrame(0x8A, []byte("p"), false)...)
	msg = append(msg, clientFrame(0x01, bytes.Repeat([]byte("x"), 300), false)...) // text, not final
	msg = append(msg, clientFrame(0x89, []byte("hello"), false)...)                // a ping between fragments
	msg = append(msg, clientFrame(0x80, bytes.Repeat([]byte("y"), wsReadLimit), false)...)
	if _, err := client.Write(msg); err != nil {
		t.Fatal(err)
	}
	v := checkUntil(t, p, func(v wsVerdict) bool { return len(v.pings) > 0 })
	if v.end || len(v.pings) != 1 || string(v.pings[0]) != "hello" || !p.heard.After(start) {
		t.Fatalf("verdict %+v, heard %v", v, p.heard)
	}
	if p.partial != nil {
		t.Fatalf("%d bytes kept after whole frames", len(p.partial))
	}
	// A close frame ends the stream, answered with a normal closure.
	if _, err := client.Write(clientFrame(0x88, []byte{0x03, 0xe8}, false)); err != nil {
		t.Fatal(err)
	}
	v = checkUntil(t, p, func(v wsVerdict) bool { return v.end })
	if v.code != wsCloseNormal {
		t.Fatalf("close frame: %+v", v)
	}
}

// TestWSPeerPartialFrame: a frame that arrives in pieces, even its head,
// is read when whole.
func TestWSPeerPartialFrame(t *testing.T) {
	server, client := socketPair(t)
	start := time.Now().Add(-time.Minute)
	p := newWSPeer(server, start)
	f := clientFrame(0x8A, []byte("abc"), false)
	for i, piece := range [][]byte{f[:1], f[1:4], f[4:]} {
		if _, err := client.Write(piece); err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			want := len(f[:1]) + len(piece)*i
			checkUntil(t, p, func(v wsVerdict) bool {
				if v.end || p.heard != start {
					t.Fatalf("piece %d: %+v, heard %v", i, v, p.heard)
				}
				return len(p.partial) >= want
			})
		}
	}
	checkUntil(t, p, func(wsVerdict) bool { return p.heard != start })
	if p.partial != nil {
		t.Fatalf("%d bytes kept after the frame", len(p.partial))
	}
}

// TestWSPeerRefuses: what breaks the protocol ends the stream with the
// code that says why.
func TestWSPeerRefuses(t *testing.T) {
	for _, c := range []struct {
		name  string
		frame []byte
		code  int
	}{
		{"unmasked", clientFrame(0x81, []byte("hi"), true), wsCloseProtocol},
		{"reserved bits", clientFrame(0xC1, []byte("hi"), false), wsCloseProtocol},
		{"reserved data opcode", clientFrame(0x83, nil, false), wsCloseProtocol},
		{"reserved control opcode", clientFrame(0x8B, nil, false), wsCloseProtocol},
		{"fragmented ping", clientFrame(0x09, []byte("a"), false), wsCloseProtocol},
		{"long ping", clientFrame(0x89, bytes.Repeat([]byte("a"), 126), false), wsCloseProtocol},
		{"data over the limit", clientFrame(0x82, bytes.Repeat([]byte("a"), wsReadLimit+1), false), wsCloseTooBig},
		// Refused from its head: the 4 GiB it announces are never awaited.
		{"huge length", clientFrame(0x82, nil, false)[:1:1], wsCloseTooBig},
	} {
		t.Run(c.name, func(t *testing.T) {
			server, client := socketPair(t)
			p := newWSPeer(server, time.Now())
			f := c.frame
			if c.name == "huge length" {
				f = binary.BigEndian.AppendUint64(append(f, 0x80|127), 1<<32)
			}
			if _, err := client.Write(f); err != nil {
				t.Fatal(err)
			}
			v := checkUntil(t, p, func(v wsVerdict) bool { return v.end })
			if v.code != c.code || v.why == "" {
				t.Fatalf("verdict %+v, want code %d", v, c.code)
			}
		})
	}
}

// TestWSPeerGone: a client that closed its side ends the stream without a
// close frame (nobody reads it), and so does one that stopped answering
// pings.
func TestWSPeerGone(t *testing.T) {
	server, client := socketPair(t)
	p := newWSPeer(server, time.Now())
	_ = client.Close()
	if v := checkUntil(t, p, func(v wsVerdict) bool { return v.end }); v.code != wsNoClose {
		t.Fatalf("EOF: %+v", v)
	}

	server, _ = socketPair(t)
	at := time.Now()
	p = newWSPeer(server, at)
	if v := p.check(at.Add(30*time.Second), 30*time.Second); v.end {
		t.Fatalf("ended within the pong wait: %+v", v)
	}
	if v := p.check(at.Add(31*time.Second), 30*time.Second); !v.end || v.code != wsNoClose {
		t.Fatalf("no pong for longer than the wait: %+v", v)
	}
}

// FuzzWSParse: whatever a client sends, parsing neither panics nor reads
// past what it was given, and a frame it accepts is no longer than that.
func FuzzWSParse(f *testing.F) {
	f.Add(clientFrame(0x8A, []byte("p"), false))
	f.Add(clientFrame(0x82, bytes.Repeat([]byte("a"), 200), false))
	f.Add([]byte{0x82, 0xFF, 0, 0, 0, 1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, n, refused := wsParse(append([]byte(nil), b...))
		if refused != nil && (n != 0 || refused.why == "") {
			t.Fatalf("refused with n %d: %+v", n, refused)
		}
		if n > len(b) || len(fr.payload) > wsReadLimit {
			t.Fatalf("frame of %d bytes from %d, payload %d", n, len(b), len(fr.payload))
		}
	})
}

// TestWSWriterAnswers: the stream answers a ping with a pong of its
// payload and a client's close with a close frame, on the socket.
func TestWSWriterAnswers(t *testing.T) {
	server, client := socketPair(t)
	w := &wsWriter{conn: server, peer: newWSPeer(server, time.Now())}
	read := func(n int) []byte {
		t.Helper()
		b := make([]byte, n)
		_ = client.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(client, b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	if _, err := client.Write(clientFrame(0x89, []byte("are you there"), false)); err != nil {
		t.Fatal(err)
	}
	checkUntil(t, w.peer, func(v wsVerdict) bool {
		for _, b := range v.pings { // what closed() does with them
			w.control(wsPong, b)
		}
		return len(v.pings) > 0
	})
	if got, want := read(15), append([]byte{0x8A, 13}, "are you there"...); !bytes.Equal(got, want) {
		t.Fatalf("pong = %q, want %q", got, want)
	}
	if _, err := client.Write(clientFrame(0x88, []byte{0x03, 0xe8}, false)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !w.closed() {
		if time.Now().After(deadline) {
			t.Fatal("the client's close never ended the stream")
		}
		time.Sleep(5 * time.Millisecond)
	}
	head := read(4)
	if head[0] != 0x88 || binary.BigEndian.Uint16(head[2:]) != wsCloseNormal {
		t.Fatalf("close frame head % x", head)
	}
}

// TestWSFrameHeads: a server frame's head carries its length in the form
// RFC 6455 asks for at each size.
func TestWSFrameHeads(t *testing.T) {
	for _, c := range []struct {
		n    int
		head []byte
	}{
		{0, []byte{0x81, 0}},
		{125, []byte{0x81, 125}},
		{126, []byte{0x81, 126, 0, 126}},
		{65535, []byte{0x81, 126, 0xff, 0xff}},
		{65536, []byte{0x81, 127, 0, 0, 0, 0, 0, 1, 0, 0}},
	} {
		b := make([]byte, wsHeadRoom+c.n)
		f := wsFrame(wsText, b)
		if !bytes.Equal(f[:len(c.head)], c.head) || len(f) != len(c.head)+c.n {
			t.Errorf("payload %d: head % x, frame %d bytes", c.n, f[:len(c.head)], len(f))
		}
	}
}
