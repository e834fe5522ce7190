package push

import (
	"time"

	"github.com/gofiber/contrib/websocket"
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"waitingroom/server/api"
	"waitingroom/stream"
)

// startKey is the local under which Upgrade hands WebSocket its Start.
const startKey = "wr.stream"

// wsCloseReplaced is the close code of a replaced WebSocket stream
// (4000-4999 are the application's; 4409 reads as HTTP 409 Conflict).
// Clients must not reconnect on it.
const wsCloseReplaced = 4409

// Upgrade checks the queue token and the user's status BEFORE the
// upgrade (Options.Open), so refusals are plain JSON errors; WebSocket
// serves the stream after it.
func (p *Streams) Upgrade(c *fiber.Ctx) error {
	if !p.o.WS {
		return errTransportOff
	}
	if !websocket.IsWebSocketUpgrade(c) {
		return &api.Error{Status: fiber.StatusUpgradeRequired, Code: "upgrade_required", Message: "this endpoint speaks WebSocket"}
	}
	start, err := p.o.Open(c)
	if start == nil || err != nil {
		return err
	}
	c.Locals(startKey, start)
	// The stream (WebSocket) runs after this returns, on the hijacked
	// connection, and gives the slot back when it ends; a failed upgrade
	// gives it back here.
	if err := c.Next(); err != nil || c.Response().StatusCode() != fiber.StatusSwitchingProtocols {
		start.Release()
		return err
	}
	return nil
}

// WebSocket is the WebSocket stream: the same messages as SSE, as JSON
// text frames {"type":"status",...} / {"type":"gone",...}, with pings.
func (p *Streams) WebSocket(conn *websocket.Conn) {
	start, _ := conn.Locals(startKey).(*Start)
	if start == nil {
		return
	}
	defer start.Release()
	claims := start.Claims
	sub := p.o.Hub.Subscribe(claims.Room, claims.Subject, start.Status)
	defer sub.Close()
	// Pings; the client's leaving is noticed by the reader.
	sub.Schedule(heartbeatEvery, 0, claims.ExpiresAt.Time)
	p.o.Metrics.Streams.WithLabelValues("ws").Inc()
	defer p.o.Metrics.Streams.WithLabelValues("ws").Dec()

	readerDone := readWSControl(conn)
	defer func() { _ = conn.Close(); <-readerDone }()
	w := &wsWriter{p: p, conn: conn, room: claims.Room, events: p.o.Metrics.StreamEvents.WithLabelValues("ws")}
	pump(sub, w, readerDone)
}

// readWSControl reads the client's frames — control frames only — until a
// missed pong or any read error; the returned channel is closed then.
func readWSControl(conn *websocket.Conn) <-chan struct{} {
	conn.SetReadLimit(wsReadLimit)
	pongWait := 2 * heartbeatEvery
	_ = conn.SetReadDeadline(time.Now().Add(pongWait))
	conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(pongWait)) })
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				return
			}
		}
	}()
	return done
}

// wsWriter is the WebSocket side of a stream (a writer): JSON text
// frames {"type":"status",...}, {"type":"gone",...}, pings, and close
// frames that say why the stream ends.
type wsWriter struct {
	p      *Streams
	conn   *websocket.Conn
	room   string
	until  time.Time // the write deadline last set
	events prometheus.Counter
}

// write sends one frame within streamWriteTimeout (the deadline moved at
// most once a second, as for SSE).
func (w *wsWriter) write(kind int, b []byte) bool {
	if now := time.Now(); w.until.Sub(now) < streamWriteTimeout-time.Second {
		w.until = now.Add(streamWriteTimeout)
		_ = w.conn.SetWriteDeadline(w.until)
	}
	return w.conn.WriteMessage(kind, b) == nil
}

func (w *wsWriter) closeWith(code int, text string) {
	_ = w.conn.SetWriteDeadline(time.Now().Add(time.Second))
	_ = w.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
}

func (w *wsWriter) send(u stream.Update) bool {
	b := bufs.Get().(*[]byte)
	defer bufs.Put(b)
	switch {
	case u.Reconnect:
		w.closeWith(websocket.CloseGoingAway, "server restarting: reconnect")
		return false
	case u.Replaced:
		// Told in a frame (what the page reads), then closed with a code
		// of its own: a client that reads no frames still sees it is not
		// a restart (1001) and must not reconnect.
		w.write(websocket.TextMessage, []byte(`{"type":"reconnect",`+replacedDoc))
		w.closeWith(wsCloseReplaced, "replaced by a newer stream")
		return false
	case u.Gone:
		*b = append(append((*b)[:0], `{"type":"gone",`...), w.p.goneData(u)[1:]...)
		w.write(websocket.TextMessage, *b)
		w.closeWith(websocket.CloseNormalClosure, "not in queue")
		return false
	}
	*b = w.p.appendStatus((*b)[:0], w.room, u, "status")
	if !w.write(websocket.TextMessage, *b) {
		return false
	}
	w.p.observeSent(w.events, u)
	return true
}

func (w *wsWriter) degraded(down bool) bool {
	b := bufs.Get().(*[]byte)
	defer bufs.Put(b)
	if down {
		*b = appendDegraded((*b)[:0], "degraded", outageRetryHint())
	} else {
		*b = append(append((*b)[:0], `{"type":"degraded",`...), degradedOver[1:]...)
	}
	return w.write(websocket.TextMessage, *b)
}

func (w *wsWriter) keepAlive() bool {
	return w.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(streamWriteTimeout)) == nil
}

// closed: the reader notices a client that left (pump's gone).
func (w *wsWriter) closed() bool { return false }

func (w *wsWriter) ended() { w.closeWith(websocket.CloseGoingAway, "reconnect") }
