package hostile

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"waitingroom/cmd/waitingroom/systemtest"
)

// wsKey is a valid Sec-WebSocket-Key (16 bytes in base64) and wsAccept
// its answer.
const wsKey = "dGhlIHNhbXBsZSBub25jZQ=="

func wsAccept(key string) string {
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// wsRequest is a WebSocket handshake for room's stream with extra header
// lines (each "Name: value").
func wsRequest(room, token string, lines ...string) string {
	var b strings.Builder
	b.WriteString("GET /api/v1/rooms/" + room + "/ws?token=" + token + " HTTP/1.1\r\nHost: x\r\n")
	for _, l := range lines {
		b.WriteString(l + "\r\n")
	}
	return b.String() + "\r\n"
}

// maskedFrame is a client frame: FIN set, opcode op, masked payload.
func maskedFrame(op byte, payload []byte) []byte {
	f := []byte{0x80 | op, 0x80 | byte(len(payload)), 1, 2, 3, 4}
	for i, c := range payload {
		f = append(f, c^f[2+i%4])
	}
	return f
}

// readFrame reads one server frame (unmasked, payload under 64 KiB).
func readFrame(t *testing.T, rc *rawConn, d time.Duration) (op byte, payload []byte) {
	t.Helper()
	_ = rc.c.SetReadDeadline(time.Now().Add(d))
	var h [2]byte
	if _, err := io.ReadFull(rc.r, h[:]); err != nil {
		t.Fatalf("frame head: %v", err)
	}
	n := int(h[1] & 0x7f)
	if n == 126 {
		var ext [2]byte
		if _, err := io.ReadFull(rc.r, ext[:]); err != nil {
			t.Fatal(err)
		}
		n = int(binary.BigEndian.Uint16(ext[:]))
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(rc.r, payload); err != nil {
		t.Fatalf("frame payload: %v", err)
	}
	return h[0] & 0x0f, payload
}

// TestWebSocketHandshakeOnRawSockets: the stream's handshake as a client
// that is not a browser sends it. Each refusal is in the contract's JSON
// form before any upgrade; a handshake from a foreign origin is refused
// however its Connection header is spelt; an accepted one gets the 101
// with the right accept key, its status frame, pongs for its pings, and a
// close 1002 for an unmasked frame. A client flooding pings on its stream
// delays nobody else's.
func TestWebSocketHandshakeOnRawSockets(t *testing.T) {
	systemtest.LongScenario(t)
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_TARGET_ACTIVE": "0", "WR_ADMIT_INTERVAL": "50ms"})
	qt := in.Enter(systemtest.User(1), "default").Str("queueToken")
	up := []string{"Connection: Upgrade", "Upgrade: websocket"}
	good := append(up, "Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: "+wsKey)

	for _, c := range []struct {
		name   string
		lines  []string
		status int
		code   string
	}{
		{"version 8", append(up, "Sec-WebSocket-Version: 8", "Sec-WebSocket-Key: "+wsKey), 400, "invalid_request"},
		{"a key of 5 bytes", append(up, "Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: c2hvcnQ="), 400, "invalid_request"},
		{"a foreign origin", append(good, "Origin: https://shop.example.net"), 403, "cross_site"},
		{"a foreign origin, Connection split in two", []string{"Connection: keep-alive", "Connection: Upgrade", "Upgrade: websocket",
			"Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: " + wsKey, "Origin: https://shop.example.net"}, 403, "cross_site"},
		{"a foreign origin, upgrade among other tokens", []string{"Connection: keep-alive,Upgrade", "Upgrade: websocket",
			"Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: " + wsKey, "Origin: https://shop.example.net"}, 403, "cross_site"},
	} {
		rc := dialRaw(t, in.Base)
		rc.send(wsRequest("default", qt, c.lines...))
		res, body := rc.response(5 * time.Second)
		wantRefusal(t, res, body, c.status, c.code)
		if c.name == "version 8" && res.Header.Get("Sec-WebSocket-Version") != "13" {
			t.Errorf("%s: Sec-WebSocket-Version %q, want 13 (the version spoken)", c.name, res.Header.Get("Sec-WebSocket-Version"))
		}
	}

	// Accepted: the 101, then the status as the first text frame.
	rc := dialRaw(t, in.Base)
	rc.send(wsRequest("default", qt, good...))
	_ = rc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(rc.r, nil)
	if err != nil || res.StatusCode != 101 || res.Header.Get("Sec-WebSocket-Accept") != wsAccept(wsKey) {
		t.Fatalf("handshake: %v %v, want 101 with accept %s", res, err, wsAccept(wsKey))
	}
	op, payload := readFrame(t, rc, 5*time.Second)
	var m systemtest.StreamMsg
	if op != 1 || json.Unmarshal(payload, &m) != nil || m.Position != 1 {
		t.Fatalf("first frame: op %d %q, want the status text frame at position 1", op, payload)
	}
	// A ping is answered with its payload (at the stream's next liveness
	// check, 2 s at most), skipping status frames meanwhile.
	rc.send(string(maskedFrame(0x9, []byte("are you there"))))
	for deadline := time.Now().Add(10 * time.Second); ; {
		op, payload = readFrame(t, rc, time.Until(deadline))
		if op == 0xA {
			break
		}
	}
	if string(payload) != "are you there" {
		t.Errorf("pong payload %q", payload)
	}

	// Another user's stream, served while the first floods pings and never
	// reads an answer.
	qt2 := in.Enter(systemtest.User(2), "default").Str("queueToken")
	other := systemtest.DialWS(t, in, "default", qt2)
	if m := systemtest.ReadWS(t, other); m.Position != 2 {
		t.Fatalf("second user's first position %d", m.Position)
	}
	flood := bytes.Repeat(maskedFrame(0x9, bytes.Repeat([]byte("p"), 125)), 4000) // 524 KB
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = rc.c.SetWriteDeadline(time.Now().Add(20 * time.Second))
		_, _ = rc.c.Write(flood) // may end when the server gives up on it
	}()
	in.SetTarget("default", 1) // admits user 1: user 2 moves to the front
	for deadline := time.Now().Add(10 * time.Second); ; {
		if time.Now().After(deadline) {
			t.Fatal("the second user's stream did not move to position 1 within 10 s beside the flood")
		}
		if m := systemtest.ReadWS(t, other); m.Position == 1 {
			break
		}
	}
	rc.c.Close()
	<-done

	// An unmasked client frame is a protocol error: close 1002.
	qt3 := in.Enter(systemtest.User(3), "default").Str("queueToken")
	rc3 := dialRaw(t, in.Base)
	rc3.send(wsRequest("default", qt3, good...))
	_ = rc3.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if res, err := http.ReadResponse(rc3.r, nil); err != nil || res.StatusCode != 101 {
		t.Fatalf("third handshake: %v %v", res, err)
	}
	rc3.send(string([]byte{0x89, 0x00})) // a ping, unmasked
	for deadline := time.Now().Add(10 * time.Second); ; {
		op, payload = readFrame(t, rc3, time.Until(deadline))
		if op == 0x8 {
			break
		}
	}
	if len(payload) < 2 || binary.BigEndian.Uint16(payload) != 1002 {
		t.Errorf("close payload %q, want code 1002", payload)
	}
}
