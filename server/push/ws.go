package push

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"net"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"waitingroom/server/api"
	"waitingroom/stream"
)

// wsCloseReplaced is the close code of a replaced WebSocket stream
// (4000-4999 are the application's; 4409 reads as HTTP 409 Conflict).
// Clients must not reconnect on it.
const wsCloseReplaced = 4409

// More close codes (RFC 6455, 7.4.1) the server sends.
const wsCloseGoingAway = 1001

// Server frames' opcodes (with FIN set).
const (
	wsText  = 0x81
	wsClose = 0x88
	wsPing  = 0x89
	wsPong  = 0x8A
)

// WebSocket is the WebSocket stream: the same messages as SSE, as JSON
// text frames {"type":"status",...} / {"type":"gone",...}, with pings.
//
// It checks the handshake (RFC 6455, 4.2.1), the queue token and the
// user's status BEFORE the upgrade (Options.Open), so refusals are JSON
// errors; then, as SSE does, it takes the connection over from fasthttp
// (hijack), answers 101 and serves the stream in the connection's one
// goroutine. The frames are written here (a server's frames are unmasked
// and whole: a head of 2 to 10 bytes, then the payload), and the
// client's, control frames, are read at the liveness checks (wsPeer): a
// waiting stream keeps no buffer and no second goroutine.
func (p *Streams) WebSocket(c *fiber.Ctx) error {
	if !p.o.WS {
		return errTransportOff
	}
	accept, err := wsHandshake(c)
	if err != nil {
		return err
	}
	start, err := p.o.Open(c)
	if start == nil || err != nil {
		return err
	}
	claims := start.Claims
	sub := p.o.Hub.Subscribe(claims.Room, claims.Subject, start.Status)
	// Pings, and the checks that read the client's frames (wsPeer).
	sub.Schedule(heartbeatEvery, livenessEvery, claims.ExpiresAt.Time)
	conn := c.Context().Conn()
	w := &wsWriter{p: p, conn: conn, peer: newWSPeer(conn, time.Now()), room: claims.Room,
		events: p.o.Metrics.StreamEvents.WithLabelValues("ws")}
	head := wsHead(accept, api.RequestID(c.Context()))
	c.Context().HijackSetNoResponse(true)
	c.Context().Hijack(func(net.Conn) { w.run(sub, head, start.Release) })
	return nil
}

// wsGUID is the handshake's constant (RFC 6455, 1.3).
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// wsHandshake checks that c asks for a WebSocket as RFC 6455 says a
// client must (a GET with Upgrade: websocket, a Connection header naming
// upgrade, version 13 and a key of 16 bytes) and returns the
// Sec-WebSocket-Accept answer. Not a WebSocket request: 426; a WebSocket
// request it cannot serve: 400, version 13 named in Sec-WebSocket-Version.
func wsHandshake(c *fiber.Ctx) (string, error) {
	if c.Method() != fiber.MethodGet || !headerHasToken(c.Get(fiber.HeaderConnection), "upgrade") ||
		!strings.EqualFold(strings.TrimSpace(c.Get(fiber.HeaderUpgrade)), "websocket") {
		return "", &api.Error{Status: fiber.StatusUpgradeRequired, Code: "upgrade_required", Message: "this endpoint speaks WebSocket"}
	}
	if c.Get("Sec-WebSocket-Version") != "13" {
		c.Set("Sec-WebSocket-Version", "13")
		return "", &api.Error{Status: fiber.StatusBadRequest, Code: "invalid_request", Message: "WebSocket version 13 only (Sec-WebSocket-Version)"}
	}
	key := strings.TrimSpace(c.Get("Sec-WebSocket-Key"))
	if raw, err := base64.StdEncoding.DecodeString(key); err != nil || len(raw) != 16 {
		return "", &api.Error{Status: fiber.StatusBadRequest, Code: "invalid_request", Message: "Sec-WebSocket-Key must be 16 bytes in base64"}
	}
	sum := sha1.Sum([]byte(key + wsGUID))
	return base64.StdEncoding.EncodeToString(sum[:]), nil
}

// headerHasToken reports whether the comma-separated header value v holds
// token, ignoring case (Connection: keep-alive, Upgrade).
func headerHasToken(v, token string) bool {
	for part := range strings.SplitSeq(v, ",") {
		if strings.EqualFold(strings.TrimSpace(part), token) {
			return true
		}
	}
	return false
}

// wsHead is the 101 answer, written on the hijacked connection, with the
// request's id (api.RequestIDHeader) when it has one.
func wsHead(accept, requestID string) string {
	head := "HTTP/1.1 101 Switching Protocols\r\n" +
		"Upgrade: websocket\r\n" +
		"Connection: Upgrade\r\n" +
		"Sec-WebSocket-Accept: " + accept + "\r\n"
	if requestID != "" {
		head += api.RequestIDHeader + ": " + requestID + "\r\n"
	}
	return head + "\r\n"
}

// wsWriter is the WebSocket side of a stream (a writer): JSON text
// frames {"type":"status",...}, {"type":"gone",...}, pings, and close
// frames that say why the stream ends. Each frame is built in a buffer
// from bufs and written straight to the hijacked connection.
type wsWriter struct {
	p      *Streams
	conn   net.Conn
	peer   *wsPeer
	room   string
	until  time.Time // the write deadline last set
	events prometheus.Counter
}

// run is the stream's goroutine, on the hijacked connection.
func (w *wsWriter) run(sub *stream.Sub, head string, release func()) {
	defer release()
	defer sub.Close()
	w.p.o.Metrics.Streams.WithLabelValues("ws").Inc()
	defer w.p.o.Metrics.Streams.WithLabelValues("ws").Dec()
	if w.write([]byte(head)) {
		pump(sub, w, nil)
	}
}

// write writes b within streamWriteTimeout (the deadline moved at most
// once a second, as for SSE).
func (w *wsWriter) write(b []byte) bool {
	if now := time.Now(); w.until.Sub(now) < streamWriteTimeout-time.Second {
		w.until = now.Add(streamWriteTimeout)
		_ = w.conn.SetWriteDeadline(w.until)
	}
	_, err := w.conn.Write(b)
	return err == nil
}

// wsHeadRoom is the room a frame's buffer leaves before its payload for
// the longest head (2 bytes and a 64-bit length).
const wsHeadRoom = 10

// wsFrame puts a frame's head in the room b leaves before its payload
// (b[wsHeadRoom:]) and returns the frame.
func wsFrame(op byte, b []byte) []byte {
	n := len(b) - wsHeadRoom
	i := wsHeadRoom - 2
	switch {
	case n < 126:
		b[i+1] = byte(n)
	case n < 1<<16:
		i -= 2
		b[i+1] = 126
		binary.BigEndian.PutUint16(b[i+2:], uint16(n))
	default:
		i -= 8
		b[i+1] = 127
		binary.BigEndian.PutUint64(b[i+2:], uint64(n))
	}
	b[i] = op
	return b[i:]
}

// control writes a control frame (its payload cut to 125 bytes).
func (w *wsWriter) control(op byte, payload []byte) bool {
	b := bufs.Get().(*[]byte)
	defer bufs.Put(b)
	*b = append(append((*b)[:0], make([]byte, wsHeadRoom)...), payload[:min(len(payload), wsMaxControlFrame)]...)
	return w.write(wsFrame(op, *b))
}

// text writes a text frame whose payload build appends.
func (w *wsWriter) text(build func([]byte) []byte) bool {
	b := bufs.Get().(*[]byte)
	defer bufs.Put(b)
	*b = build(append((*b)[:0], make([]byte, wsHeadRoom)...))
	return w.write(wsFrame(wsText, *b))
}

// closeWith writes a close frame, code then text (cut to fit), within a
// second: the stream ends after it.
func (w *wsWriter) closeWith(code int, text string) {
	var b [wsHeadRoom + wsMaxControlFrame]byte
	binary.BigEndian.PutUint16(b[wsHeadRoom:], uint16(code))
	n := wsHeadRoom + 2 + copy(b[wsHeadRoom+2:], text)
	w.until = time.Time{}
	_ = w.conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = w.conn.Write(wsFrame(wsClose, b[:n]))
}

func (w *wsWriter) send(u stream.Update) bool {
	switch {
	case u.Reconnect:
		w.closeWith(wsCloseGoingAway, "server restarting: reconnect")
		return false
	case u.Replaced:
		// Told in a frame (what the page reads), then closed with a code
		// of its own: a client that reads no frames still sees it is not
		// a restart (1001) and must not reconnect.
		w.text(func(b []byte) []byte { return append(b, `{"type":"reconnect",`+replacedDoc...) })
		w.closeWith(wsCloseReplaced, "replaced by a newer stream")
		return false
	case u.Gone:
		w.text(func(b []byte) []byte { return append(append(b, `{"type":"gone",`...), w.p.goneData(u)[1:]...) })
		w.closeWith(wsCloseNormal, "not in queue")
		return false
	}
	if !w.text(func(b []byte) []byte { return w.p.appendStatus(b, w.room, u, "status") }) {
		return false
	}
	w.p.observeSent(w.events, u)
	return true
}

func (w *wsWriter) degraded(down bool) bool {
	return w.text(func(b []byte) []byte {
		if down {
			return appendDegraded(b, "degraded", outageRetryHint())
		}
		return append(append(b, `{"type":"degraded",`...), degradedOver[1:]...)
	})
}

func (w *wsWriter) keepAlive() bool { return w.control(wsPing, nil) }

// closed reads the frames the client sent since the last check (wsPeer):
// it answers pings, and reports a client that closed the stream or the
// connection, broke the protocol or stopped answering pings.
func (w *wsWriter) closed() bool {
	v := w.peer.check(time.Now(), 2*heartbeatEvery)
	for _, b := range v.pings {
		if !w.control(wsPong, b) {
			return true
		}
	}
	if v.end && v.code != wsNoClose {
		w.closeWith(v.code, v.why)
	}
	return v.end
}

func (w *wsWriter) ended() { w.closeWith(wsCloseGoingAway, "reconnect") }
