package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/gofiber/contrib/websocket"
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"waitingroom/queue"
	"waitingroom/server/api"
	"waitingroom/server/token"
	"waitingroom/stream"
)

const (
	// heartbeatEvery keeps proxies from closing idle streams and finds
	// clients that left: on fasthttp a failed write is the only sign.
	heartbeatEvery = 15 * time.Second
	// streamWriteTimeout bounds one write to a stream; a peer that does not
	// read for this long is dropped (the deadline moves at most once a
	// second: a write gets 9 to 10 s).
	streamWriteTimeout = 10 * time.Second
	// wsReadLimit is the largest frame a client may send (they send none
	// but control frames).
	wsReadLimit = 512
)

// livenessEvery is how often an SSE stream checks whether its client has
// closed the connection (a chore the hub hands out on its sweeps). A write to a closed peer often succeeds (the
// kernel buffers it), so heartbeats alone notice a departed client only
// after two of them; a departed client's stream would hold its descriptor
// for 30 s or more, which matters in a reconnect storm.
const livenessEvery = 2 * time.Second

// peerClosed reports whether the client has closed its side: the socket
// reads end-of-file. It peeks without blocking and consumes nothing.
func peerClosed(conn net.Conn) bool {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	_ = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = n == 0 && err == nil
		return true // never wait for readability
	})
	return closed
}

// replacedRetryMs is the retry: hint of a stream ended by a newer one of
// the same user: 5 minutes. The page does not reconnect at all (it polls);
// a plain EventSource would, and taking the slot back from the newer
// stream at once would make the two take turns every few seconds.
const replacedRetryMs = 300_000

// replacedDoc is the data of the "reconnect" event (SSE) and the body of the
// {"type":"reconnect",...} frame (WebSocket) of a replaced stream.
var replacedDoc = `"reason":"replaced","retryAfterMs":` + strconv.Itoa(replacedRetryMs) + `,"message":"this place is followed by a newer connection (another tab or device); this one stops, and the place is kept"}`

// wsCloseReplaced is the close code of a replaced WebSocket stream
// (4000-4999 are the application's; 4409 reads as HTTP 409 Conflict).
// Clients must not reconnect on it.
const wsCloseReplaced = 4409

// errTransportOff: the operator disabled this push transport (WR_TRANSPORTS).
var errTransportOff = &api.Error{Status: 503, Code: "unavailable", Message: "this push transport is off here: use another one, or poll", RetryAfter: 60}

// goneDoc is the data of a "gone" event: the contract's error form.
var goneDoc = []byte(`{"error":"not_in_queue","message":"you are no longer in this queue (admitted window ended, left, or ordered): enter again"}`)

// goneData is the data of u's "gone" event: the idle refusal (with its
// reason and timeout) when the user was dropped as idle, else goneDoc.
func (s *Server) goneData(u stream.Update) []byte {
	if u.Idle {
		return s.idleDoc()
	}
	return goneDoc
}

// streamClaims verifies the queue token of a stream request: from the
// Authorization header, the wr_queue cookie, or — on stream endpoints
// only — the token query parameter (EventSource cannot set headers).
func (s *Server) streamClaims(c *fiber.Ctx) (*token.Claims, string, error) {
	raw := api.Bearer(c)
	if raw == "" {
		raw = queueCookieValue(s.gw != nil, requestCookie(c), roomParam(c))
	}
	if raw == "" {
		raw = c.Query("token")
	}
	if raw == "" {
		return nil, "", api.ErrUnauthorized
	}
	claims, err := s.tokens.Parse(raw, token.KindQueue)
	if err != nil {
		return nil, "", err
	}
	api.SetUser(c, &claims.Subject) // for the access line
	if err := s.checkUser(claims.Subject); err != nil {
		return nil, "", err
	}
	room := roomParam(c)
	if claims.Room != room {
		return nil, "", errWrongRoom
	}
	if err := s.limit(c, "stream", room+":"+claims.Subject, claims.Subject, s.cfg.Limits.Stream, true); err != nil {
		return nil, "", err
	}
	return claims, room, nil
}

// exactBand: users at these positions (or within the room's targetActive)
// are the next to be admitted; their polls must see READY the moment it
// happens, not one pub/sub hop later. They are answered by the hub's
// PositionNow (memory, after one read of the room's event number shared
// by every poll in flight on this instance), else by Redis.
const exactBand = 100

// currentStatus answers from the hub's memory when it is fresh — at the
// front only once confirmed exact (PositionNow) — else from Redis (the
// judge).
func (s *Server) currentStatus(ctx context.Context, room string, claims *token.Claims) (queue.Status, error) {
	st, ok := s.hub.Position(room, claims.Seq)
	if ok && st.Position > max(exactBand, st.Target) {
		return st, nil
	}
	if ok {
		if st, ok = s.hub.PositionNow(ctx, room, claims.Seq); ok {
			return st, nil
		}
	}
	return s.q.Status(ctx, room, claims.Subject)
}

// appendStatus appends the stream form of a status: the QueueStatus
// document (with "type":kind first when kind is set, for WebSocket) plus
// "ts", the publish time of the change (Unix ms), so clients and the load
// tool can measure fan-out lag.
func (s *Server) appendStatus(b []byte, room string, u stream.Update, kind string) []byte {
	doc := s.statusDoc(room, u.Status)
	b = append(b, '{')
	if kind != "" {
		b = append(append(append(b, `"type":"`...), kind...), `",`...)
	}
	b = appendStatusFields(b, &doc)
	if !u.Published.IsZero() {
		b = strconv.AppendInt(append(b, `,"ts":`...), u.Published.UnixMilli(), 10)
	}
	return append(b, '}')
}

// outageRetryHint is the reconnect delay while Redis is unreachable: 5 to
// 15 s, so clients cut off meanwhile do not hammer an instance that can
// only answer 503 until Redis is back.
func outageRetryHint() int { return 5000 + rand.IntN(10000) }

// degradedOver is the data of the "degraded" event that ends an outage.
const degradedOver = `{"degraded":false}`

// appendDegraded appends the data of the "degraded" event that starts an
// outage (with a "type" first when kind is set, for WebSocket).
func appendDegraded(b []byte, kind string, retryMs int) []byte {
	b = append(b, '{')
	if kind != "" {
		b = append(b, `"type":"`+kind+`",`...)
	}
	return fmt.Appendf(b, `"degraded":true,"retryAfterMs":%d,"message":"the queue service is briefly unreachable: your place is kept and nobody is admitted meanwhile"}`, retryMs)
}

// retryHint is a reconnect delay with jitter, so clients that lose their
// instance together do not all come back in the same millisecond.
func retryHint() int { return 1000 + rand.IntN(2000) }

// events is the SSE stream: the current status at once, then a status event
// whenever it changes (coalesced by band), a heartbeat comment at least
// every 15 s, and gone when the user is no longer in the queue.
func (s *Server) events(c *fiber.Ctx) error {
	if !s.cfg.SSE {
		return errTransportOff
	}
	claims, room, err := s.streamClaims(c)
	if err != nil {
		return err
	}
	st, err := s.currentStatus(c.UserContext(), room, claims)
	if err != nil {
		return s.notInQueue(c, err) // 404 not_in_queue or 503, as JSON, before any streaming
	}
	release, err := s.holdStream(c)
	if err != nil {
		return err
	}
	sub := s.hub.Subscribe(room, claims.Subject, st)
	sub.Schedule(heartbeatEvery, livenessEvery, claims.ExpiresAt.Time)
	// The stream takes the connection over from fasthttp (hijack): one
	// goroutine per stream, instead of fasthttp's connection goroutine,
	// its buffers and a pipe. The response is close-delimited: no
	// Content-Length, no chunking.
	w := &sseWriter{s: s, conn: c.Context().Conn(), room: room, id: lastEventID(c), events: s.m.StreamEvents.WithLabelValues("sse")}
	head := sseHead(api.RequestID(c.Context()))
	c.Context().HijackSetNoResponse(true)
	c.Context().Hijack(func(net.Conn) { w.run(sub, head, release) })
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

// bufs are the stream writers' message buffers: one per write under way,
// not one per stream.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// sseWriter is the SSE side of a stream (a streamWriter). It writes each
// message straight to the hijacked connection, built in a buffer from
// bufs: a stream keeps no buffer of its own between messages.
type sseWriter struct {
	s      *Server
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
	w.s.m.Streams.WithLabelValues("sse").Inc()
	defer w.s.m.Streams.WithLabelValues("sse").Dec()
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
		buf = append(buf, w.s.goneData(u)...)
		buf = append(buf, "\n\n"...)
	default:
		w.id = max(w.id+1, u.Ev)
		buf = strconv.AppendInt(append(buf, "event: status\nid: "...), w.id, 10)
		buf = w.s.appendStatus(append(buf, "\ndata: "...), w.room, u, "")
		buf = append(buf, "\n\n"...)
	}
	*b = buf
	if !w.write(buf) {
		return false
	}
	w.s.observeSent(w.events, u)
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

// streamWriter is one transport's side of a stream.
type streamWriter interface {
	send(u stream.Update) bool // writes one update; false ends the stream
	keepAlive() bool           // SSE heartbeat comment, WebSocket ping
	closed() bool              // whether the client has gone (asked every livenessEvery)
	degraded(down bool) bool   // tells the client Redis is (no longer) unreachable
	ended()                    // the hub ended the stream without a last word
}

// pump delivers sub's updates and chores through w until the stream ends:
// the client leaves (or gone is closed), a write fails, the hub ends it
// (gone, reconnect, stalled) or the queue token expires (gone). It holds
// no timer: keep-alives, liveness checks and the expiry are the hub's
// chores (Sub.Schedule), handed out on its sweeps. While it waits, its
// small frame is the top of the goroutine's stack (the writing happens in
// deliver's callees), so the stack can shrink back between updates.
func pump(sub *stream.Sub, w streamWriter, gone <-chan struct{}) {
	down, outage := sub.Outage()
	if !deliver(sub, w) || down && !w.degraded(true) {
		return
	}
	for {
		select {
		case <-sub.Notify():
			if !deliver(sub, w) {
				return
			}
		case <-sub.Done():
			lastWord(sub, w)
			return
		case <-outage:
			var now bool
			if now, outage = sub.Outage(); now != down {
				if down = now; !w.degraded(down) {
					return
				}
			}
		case <-gone:
			return
		}
	}
}

// lastWord writes the update the hub left when it ended the stream, if
// any. Not inlined: see deliver.
//
//go:noinline
func lastWord(sub *stream.Sub, w streamWriter) {
	if u, ok := sub.Take(); ok {
		w.send(u)
	} else {
		w.ended()
	}
}

// deliver writes sub's waiting update, then does the chores the hub handed
// out; false ends the stream.
//
// Not inlined, and neither is lastWord: an Update in pump's own frame
// would keep that frame large while the stream waits, and a waiting
// stream's goroutine stack is shrunk (halved, at a collection) only
// while it uses under a quarter of it. Measured at 18,000 streams: with
// them inlined the stacks stayed at 8 KiB each.
//
//go:noinline
func deliver(sub *stream.Sub, w streamWriter) bool {
	if u, ok := sub.Take(); ok && !w.send(u) {
		return false
	}
	c := sub.Chores()
	switch {
	case c&stream.Expire != 0:
		w.send(stream.Update{Gone: true}) // the queue token expired
		return false
	case c&stream.Check != 0 && w.closed():
		return false
	case c&stream.Beat != 0:
		return w.keepAlive()
	}
	return true
}

// observeSent counts a written update and its fan-out lag.
func (s *Server) observeSent(events prometheus.Counter, u stream.Update) {
	events.Inc()
	if !u.Published.IsZero() {
		s.m.FanoutLag.Observe(time.Since(u.Published).Seconds())
	}
}

// wsUpgrade checks the queue token and the user's status BEFORE the
// upgrade, so refusals are plain JSON errors.
func (s *Server) wsUpgrade(c *fiber.Ctx) error {
	if !s.cfg.WS {
		return errTransportOff
	}
	if !websocket.IsWebSocketUpgrade(c) {
		return &api.Error{Status: fiber.StatusUpgradeRequired, Code: "upgrade_required", Message: "this endpoint speaks WebSocket"}
	}
	claims, room, err := s.streamClaims(c)
	if err != nil {
		return err
	}
	st, err := s.currentStatus(c.UserContext(), room, claims)
	if err != nil {
		return s.notInQueue(c, err)
	}
	release, err := s.holdStream(c)
	if err != nil {
		return err
	}
	c.Locals("wr.claims", claims)
	c.Locals("wr.status", st)
	c.Locals("wr.release", release)
	// The stream (ws) runs after this returns, on the hijacked connection,
	// and gives the slot back when it ends; a failed upgrade gives it back
	// here.
	if err := c.Next(); err != nil || c.Response().StatusCode() != fiber.StatusSwitchingProtocols {
		release()
		return err
	}
	return nil
}

// ws is the WebSocket stream: the same messages as SSE, as JSON text
// frames {"type":"status",...} / {"type":"gone",...}, with pings.
func (s *Server) ws(conn *websocket.Conn) {
	claims, _ := conn.Locals("wr.claims").(*token.Claims)
	st, _ := conn.Locals("wr.status").(queue.Status)
	if release, ok := conn.Locals("wr.release").(func()); ok {
		defer release()
	}
	if claims == nil {
		return
	}
	sub := s.hub.Subscribe(claims.Room, claims.Subject, st)
	defer sub.Close()
	// Pings; the client's leaving is noticed by the reader.
	sub.Schedule(heartbeatEvery, 0, claims.ExpiresAt.Time)
	s.m.Streams.WithLabelValues("ws").Inc()
	defer s.m.Streams.WithLabelValues("ws").Dec()

	readerDone := readWSControl(conn)
	defer func() { _ = conn.Close(); <-readerDone }()
	w := &wsWriter{s: s, conn: conn, room: claims.Room, events: s.m.StreamEvents.WithLabelValues("ws")}
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

// wsWriter is the WebSocket side of a stream (a streamWriter): JSON text
// frames {"type":"status",...}, {"type":"gone",...}, pings, and close
// frames that say why the stream ends.
type wsWriter struct {
	s      *Server
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
		*b = append(append((*b)[:0], `{"type":"gone",`...), w.s.goneData(u)[1:]...)
		w.write(websocket.TextMessage, *b)
		w.closeWith(websocket.CloseNormalClosure, "not in queue")
		return false
	}
	*b = w.s.appendStatus((*b)[:0], w.room, u, "status")
	if !w.write(websocket.TextMessage, *b) {
		return false
	}
	w.s.observeSent(w.events, u)
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
