// Package stream opens the server's push streams as a waiting user's
// browser would — SSE (GET events with the queue token as a Bearer header,
// parsed by stream/sseclient) or WebSocket (GET ws?token=) — one goroutine and
// one connection with 4 KiB buffers each, and names why one ended.
package stream

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fasthttp/websocket"

	"waitingroom/loadtest/internal/client"
	"waitingroom/stream/sseclient"
)

// BufSize is each stream's read buffer (and the WebSocket write buffer's
// size): push messages are a few hundred bytes, and the tool holds ten
// thousand streams.
const BufSize = 4 << 10

// Status is the part of a pushed QueueStatus the tool reads, plus "ts":
// when the admission that caused the update was published (Unix ms, Redis
// clock); 0 when the server does not send it.
type Status struct {
	Status     string `json:"status"`
	Position   int64  `json:"position"`
	EntryToken string `json:"entryToken"`
	TS         int64  `json:"ts"`
	// ETASeconds and ETAKnown are set on WAITING (etaSeconds absent while
	// the estimate is withheld).
	ETASeconds *int64 `json:"etaSeconds"`
	ETAKnown   *bool  `json:"etaKnown"`
	// EntryExpiresAt is set on READY.
	EntryExpiresAt *time.Time `json:"entryExpiresAt"`
}

// Msg is one message of a stream, either transport.
type Msg struct {
	Kind   string // "status", "gone", or what else the server sent
	Status Status
	Bad    bool      // a status whose data did not decode
	At     time.Time // when it was read
}

// Conn is one open stream. Next and Heartbeats belong to the stream's
// goroutine; Close may be called from any goroutine, any number of times,
// and makes a blocked Next return.
type Conn interface {
	Next() (Msg, error)
	Heartbeats() int // SSE comment lines, WebSocket pings
	Close()
}

// Dialer opens streams of one room over one transport. Its connections
// come from package client's loopback-spreading dialer.
type Dialer struct {
	transport string // "sse" or "ws"
	base      *url.URL
	room      string
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
	ws        *websocket.Dialer
	idle      time.Duration // a stream without a byte (or ping) for this long is dead
}

// NewDialer returns a dialer of transport ("sse" or "ws") streams of room
// at base; a stream without a byte (or ping) for idle is dead.
func NewDialer(transport, base, room string, timeout, idle time.Duration) (*Dialer, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("streams: --base %q is not an http(s) URL", base)
	}
	// client.New's transport holds the dialer that spreads connections over
	// 127.0.0.2, 127.0.0.3, …; the streams use it directly, one connection
	// and one goroutine each, without net/http's two goroutines per
	// connection.
	tr, ok := client.New(1, timeout).Transport.(*http.Transport)
	if !ok || tr.DialContext == nil {
		return nil, errors.New("streams: newClient has no DialContext")
	}
	d := &Dialer{transport: transport, base: u, room: room, dial: tr.DialContext, idle: idle}
	switch transport {
	case "sse":
	case "ws":
		d.ws = &websocket.Dialer{
			NetDialContext:   tr.DialContext,
			HandshakeTimeout: timeout,
			ReadBufferSize:   BufSize,
			WriteBufferSize:  1 << 10, // the client writes only pongs and a close
		}
	default:
		return nil, fmt.Errorf("streams: --transport %q: want sse or ws", transport)
	}
	return d, nil
}

// From returns a copy of d whose connections come from dial (one source
// address of a crowd, say).
func (d *Dialer) From(dial client.DialFunc) *Dialer {
	c := *d
	c.dial = dial
	if d.ws != nil {
		ws := *d.ws
		ws.NetDialContext = dial
		c.ws = &ws
	}
	return &c
}

// Open connects one stream with queueToken and reads its first message,
// the status the server sends on connect, all within ctx. An answer other
// than the stream is a client.StatusError.
func (d *Dialer) Open(ctx context.Context, queueToken string) (Conn, Msg, error) {
	var (
		pc  Conn
		err error
	)
	if d.transport == "ws" {
		pc, err = d.openWS(ctx, queueToken)
	} else {
		pc, err = d.openSSE(ctx, queueToken)
	}
	if err != nil {
		return nil, Msg{}, err
	}
	stop := context.AfterFunc(ctx, pc.Close) // bounds the first read by ctx
	m, err := pc.Next()
	if !stop() { // ctx ended, and pc.close ran
		return nil, Msg{}, fmt.Errorf("first message: %w", ctx.Err())
	}
	if err != nil {
		pc.Close()
		return nil, Msg{}, fmt.Errorf("first message: %w", err)
	}
	return pc, m, nil
}

func (d *Dialer) path(action string) string {
	return "/api/v1/rooms/" + url.PathEscape(d.room) + "/" + action
}

// openSSE sends GET events with the token as a Bearer header over a
// connection of its own and reads the answer's header.
func (d *Dialer) openSSE(ctx context.Context, queueToken string) (Conn, error) {
	addr := d.base.Host
	if d.base.Port() == "" {
		addr = net.JoinHostPort(d.base.Hostname(), map[string]string{"http": "80", "https": "443"}[d.base.Scheme])
	}
	nc, err := d.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	if d.base.Scheme == "https" {
		tc := tls.Client(nc, &tls.Config{ServerName: d.base.Hostname()})
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		nc = tc
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.base.String()+d.path("events"), nil)
	if err != nil {
		nc.Close()
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+queueToken)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	br := bufio.NewReaderSize(nc, BufSize)
	var resp *http.Response
	if err = req.Write(nc); err == nil {
		resp, err = http.ReadResponse(br, req)
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		nc.Close()
		return nil, client.StatusError(resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		nc.Close()
		return nil, fmt.Errorf("Content-Type %q, want text/event-stream", ct)
	}
	// The body is never Closed: net/http would drain an endless stream.
	// Closing the connection ends it.
	c := &sseConn{nc: nc, idle: d.idle}
	c.rd = sseclient.NewReader(&idleReader{r: resp.Body, nc: nc, idle: d.idle})
	return c, nil
}

// idleReader pushes the connection's read deadline idle ahead before every
// read, so the stream dies after idle without a single byte — comment
// heartbeats count, which the sseclient.Reader does not surface as events.
type idleReader struct {
	r    io.Reader
	nc   net.Conn
	idle time.Duration
}

func (r *idleReader) Read(p []byte) (int, error) {
	r.nc.SetReadDeadline(time.Now().Add(r.idle))
	return r.r.Read(p)
}

type sseConn struct {
	nc   net.Conn
	rd   *sseclient.Reader
	idle time.Duration
	once sync.Once
}

func (c *sseConn) Next() (Msg, error) {
	ev, err := c.rd.Next()
	if err != nil {
		return Msg{}, err
	}
	m := Msg{Kind: ev.Type, At: time.Now()}
	if ev.Type == "status" {
		m.Bad = json.Unmarshal([]byte(ev.Data), &m.Status) != nil
	}
	return m, nil
}

func (c *sseConn) Heartbeats() int { return c.rd.Comments() }
func (c *sseConn) Close()          { c.once.Do(func() { c.nc.Close() }) }

// openWS upgrades GET ws?token=… (browsers cannot set headers on a
// WebSocket, so the token travels in the query, as the page sends it).
func (d *Dialer) openWS(ctx context.Context, queueToken string) (Conn, error) {
	u := *d.base
	u.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
	u.Path = strings.TrimRight(d.base.Path, "/") + d.path("ws") // under the base's path: /_wr in gateway mode
	u.RawQuery = url.Values{"token": {queueToken}}.Encode()
	wc, resp, err := d.ws.DialContext(ctx, u.String(), nil)
	if err != nil {
		if errors.Is(err, websocket.ErrBadHandshake) && resp != nil {
			err = client.StatusError(resp.StatusCode)
		}
		return nil, err
	}
	c := &wsConn{c: wc, idle: d.idle}
	wc.SetPingHandler(func(data string) error {
		c.pings++
		wc.SetReadDeadline(time.Now().Add(c.idle))
		err := wc.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
		var ne net.Error
		if errors.Is(err, websocket.ErrCloseSent) || (errors.As(err, &ne) && ne.Timeout()) {
			return nil // as the default handler: a late pong is not fatal
		}
		return err
	})
	return c, nil
}

type wsConn struct {
	c     *websocket.Conn
	idle  time.Duration
	pings int
	once  sync.Once
}

func (c *wsConn) Next() (Msg, error) {
	c.c.SetReadDeadline(time.Now().Add(c.idle))
	_, data, err := c.c.ReadMessage()
	if err != nil {
		return Msg{}, err
	}
	var env struct {
		Type string `json:"type"`
		Status
	}
	m := Msg{At: time.Now()}
	if err := json.Unmarshal(data, &env); err != nil {
		return Msg{Bad: true, At: m.At}, nil
	}
	m.Kind, m.Status = env.Type, env.Status
	return m, nil
}

func (c *wsConn) Heartbeats() int { return c.pings }

func (c *wsConn) Close() {
	c.once.Do(func() {
		msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")
		c.c.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second))
		c.c.Close()
	})
}

// WhyEnded names, in a few words, why a stream or an attempt to open one
// failed; the report counts streams by it.
func WhyEnded(err error) string {
	var (
		se client.StatusError
		ce *websocket.CloseError
		ne net.Error
	)
	switch {
	case err == nil:
		return "-"
	case errors.As(err, &se):
		return se.Error()
	case errors.As(err, &ce):
		return fmt.Sprintf("closed by server (WebSocket close %d)", ce.Code)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "closed by server"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.EADDRNOTAVAIL), errors.Is(err, syscall.EADDRINUSE):
		return "no free source port (client)"
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return "too many open files (client)"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, sseclient.ErrLineTooLong), errors.Is(err, sseclient.ErrEventTooLarge):
		return "oversized SSE line or event"
	}
	s := err.Error()
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return s
}

// MaxMessages bounds the messages one stream is read for (a user at
// the front gets one per admission tick: 600 a minute at 100 ms).
const MaxMessages = 100_000

// MaxLagSamples caps the lag samples one stream keeps, so memory stays
// bounded whatever the server sends (a stream at the front gets about one
// event per admission tick: 600 a minute at the default 100 ms).
const MaxLagSamples = 10_000
