package push

import (
	"net"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"waitingroom/server/api"
	"waitingroom/stream"
)

// livenessEvery is how often a stream checks whether its client has
// closed the connection (a chore the hub hands out on its sweeps); a
// WebSocket stream reads its client's frames then (wsPeer). A write to a
// closed peer often succeeds (the kernel buffers it), so heartbeats alone notice a departed client only
// after two of them; a departed client's stream would hold its descriptor
// for 30 s or more, which matters in a reconnect storm.
const livenessEvery = 2 * time.Second

// Events is the SSE stream: the current status at once, then a status event
// whenever it changes (coalesced by band), a heartbeat comment at least
// every 15 s, and gone when the user is no longer in the queue.
func (p *Streams) Events(c *fiber.Ctx) error {
	if !p.o.SSE {
		return errTransportOff
	}
	start, err := p.o.Open(c) // 404 not_in_queue or 503, as JSON, before any streaming
	if start == nil || err != nil {
		return err
	}
	claims, room := start.Claims, start.Room
	sub := p.o.Hub.Subscribe(room, claims.Subject, start.Status)
	sub.Schedule(heartbeatEvery, livenessEvery, claims.ExpiresAt.Time)
	// The stream takes the connection over from fasthttp (hijack): one
	// goroutine per stream, instead of fasthttp's connection goroutine,
	// its buffers and a pipe. The response is close-delimited: no
	// Content-Length, no chunking. The slot and the subscription are
	// given back by run: with no response of fasthttp's own to write
	// (HijackSetNoResponse), fasthttp starts the hijack handler whatever
	// the request said (Connection: close included); the one path that
	// skips it is a failed SetDeadline on a connection fasthttp itself
	// has already closed, which a client cannot cause.
	w := &sseWriter{p: p, conn: c.Context().Conn(), room: room, id: lastEventID(c), events: p.o.Metrics.StreamEvents.WithLabelValues("sse")}
	head := sseHead(api.RequestID(c.Context()))
	c.Context().HijackSetNoResponse(true)
	c.Context().Hijack(func(net.Conn) { w.run(sub, head, start.Release) })
	return nil
}

// SSE event ids: a status event's id is the room's event number the
// status reflects (stream.Update.Ev), or one more than the stream's last
// id when that is not greater — never less than the Last-Event-ID the
// client reconnected with. So ids only grow along a stream and across its
// reconnects (EventSource sends the last id it saw), and a client may drop
// an event whose id it has seen. A reconnect is not replayed: its first
// event is the current status, as on any connect. Only status events
// carry an id.
//
// maxEventID bounds a Last-Event-ID taken from a client: 2^53, the largest
// integer a JavaScript client holds exactly. A larger or malformed one is
// ignored (the stream starts from the room's number).
const maxEventID = 1 << 53

// lastEventID is the request's Last-Event-ID when it is an id this server
// could have sent, else 0.
func lastEventID(c *fiber.Ctx) int64 {
	n, err := strconv.ParseInt(c.Get("Last-Event-ID"), 10, 64)
	if err != nil || n < 0 || n >= maxEventID {
		return 0
	}
	return n
}

// sseHead is the stream's response head, written on the hijacked
// connection, with the request's id (api.RequestIDHeader) when it has one.
func sseHead(requestID string) string {
	const head = "HTTP/1.1 200 OK\r\n" +
		"Content-Type: text/event-stream\r\n" +
		"Cache-Control: no-store\r\n" +
		"X-Accel-Buffering: no\r\n" +
		"X-Content-Type-Options: nosniff\r\n" +
		"Referrer-Policy: no-referrer\r\n" +
		"Connection: close\r\n"
	if requestID == "" {
		return head + "\r\n"
	}
	return head + api.RequestIDHeader + ": " + requestID + "\r\n\r\n"
}

// sseWriter is the SSE side of a stream (a writer). It writes each
// message straight to the hijacked connection, built in a buffer from
// bufs: a stream keeps no buffer of its own between messages.
type sseWriter struct {
	p      *Streams
	conn   net.Conn
	room   string
	id     int64     // the last status event's id (sseID)
	until  time.Time // the write deadline last set
	events prometheus.Counter
}

// run is the stream's goroutine, on the hijacked connection.
func (w *sseWriter) run(sub *stream.Sub, head string, release func()) {
	defer release()
	defer sub.Close()
	w.p.o.Metrics.Streams.WithLabelValues("sse").Inc()
	defer w.p.o.Metrics.Streams.WithLabelValues("sse").Dec()
	b := bufs.Get().(*[]byte)
	*b = strconv.AppendInt(append(append((*b)[:0], head...), "retry: "...), int64(retryHint()), 10)
	*b = append(*b, "\n\n"...)
	ok := w.write(*b)
	bufs.Put(b)
	if ok {
		pump(sub, w, nil)
	}
}

// write writes b within streamWriteTimeout. The deadline is moved at most
// once a second (a timer change per write would cost more than the write
// at thousands of writes a second), so a write gets 9 to 10 s.
func (w *sseWriter) write(b []byte) bool {
	if now := time.Now(); w.until.Sub(now) < streamWriteTimeout-time.Second {
		w.until = now.Add(streamWriteTimeout)
		_ = w.conn.SetWriteDeadline(w.until)
	}
	_, err := w.conn.Write(b)
	return err == nil
}

func (w *sseWriter) send(u stream.Update) bool {
	b := bufs.Get().(*[]byte)
	defer bufs.Put(b)
	buf := (*b)[:0]
	switch {
	case u.Reconnect:
		// EventSource reconnects by itself after the retry delay; the
		// event tells other clients to do the same.
		buf = strconv.AppendInt(append(buf, "retry: "...), int64(retryHint()), 10)
		buf = append(buf, "\nevent: reconnect\ndata: {\"reason\":\"shutdown\"}\n\n"...)
	case u.Replaced:
		buf = strconv.AppendInt(append(buf, "retry: "...), replacedRetryMs, 10)
		buf = append(buf, "\nevent: reconnect\ndata: {"+replacedDoc+"\n\n"...)
	case u.Gone:
		buf = append(buf, "event: gone\ndata: "...)
		buf = append(buf, w.p.goneData(u)...)
		buf = append(buf, "\n\n"...)
	default:
		w.id = max(w.id+1, u.Ev)
		buf = strconv.AppendInt(append(buf, "event: status\nid: "...), w.id, 10)
		buf = w.p.appendStatus(append(buf, "\ndata: "...), w.room, u, "")
		buf = append(buf, "\n\n"...)
	}
	*b = buf
	if !w.write(buf) {
		return false
	}
	w.p.observeSent(w.events, u)
	return !u.Reconnect && !u.Gone && !u.Replaced
}

// degraded tells the client that Redis is (no longer) unreachable. The
// retry: line is the hint EventSource obeys if the connection is cut:
// slowly while Redis is away, then as usual.
func (w *sseWriter) degraded(down bool) bool {
	b := bufs.Get().(*[]byte)
	defer bufs.Put(b)
	buf := append((*b)[:0], "retry: "...)
	if down {
		ms := outageRetryHint()
		buf = append(strconv.AppendInt(buf, int64(ms), 10), "\nevent: degraded\ndata: "...)
		buf = appendDegraded(buf, "", ms)
	} else {
		buf = append(strconv.AppendInt(buf, int64(retryHint()), 10), "\nevent: degraded\ndata: "...)
		buf = append(buf, degradedOver...)
	}
	buf = append(buf, "\n\n"...)
	*b = buf
	return w.write(buf)
}

// sseHeartbeat is the SSE keep-alive, a comment.
var sseHeartbeat = []byte(": heartbeat\n\n")

func (w *sseWriter) keepAlive() bool { return w.write(sseHeartbeat) }

func (w *sseWriter) closed() bool { return peerClosed(w.conn) }

func (w *sseWriter) ended() {}
