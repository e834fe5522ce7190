package gateway

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// Protocol switches (WebSocket): the request is written to the origin on a
// connection of its own, and once written the visitor's connection and the
// origin's are joined byte for byte until either side closes — the
// origin's 101 (or refusal) included. The gateway sees no frames.

// isUpgrade reports whether a request asks to switch to WebSocket.
func isUpgrade(h *fasthttp.RequestHeader) bool {
	if !bytes.EqualFold(h.Peek("Upgrade"), []byte("websocket")) {
		return false
	}
	for _, t := range bytes.Split(h.Peek("Connection"), []byte{','}) {
		if bytes.EqualFold(bytes.TrimSpace(t), []byte("upgrade")) {
			return true
		}
	}
	return false
}

// tunnels are the open joined connections, closed at shutdown.
type tunnels struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	done  bool
}

func (t *tunnels) add(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return false
	}
	if t.conns == nil {
		t.conns = map[net.Conn]struct{}{}
	}
	t.conns[c] = struct{}{}
	return true
}

func (t *tunnels) remove(c net.Conn) {
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
}

func (t *tunnels) closeAll() {
	t.mu.Lock()
	t.done = true
	for c := range t.conns {
		_ = c.Close()
	}
	t.mu.Unlock()
}

// Tunnel dials the origin, writes ctx's request (prepared: forwarding
// headers set, the upgrade asked for again) and joins the connections once
// the handler returns. An error means nothing was sent: the caller answers.
func (u *Upstream) Tunnel(ctx *fasthttp.RequestCtx) error {
	conn, err := u.dial()
	if err != nil {
		return err
	}
	h := &ctx.Request.Header
	h.Set("Connection", "Upgrade")
	h.Set("Upgrade", "websocket")
	_ = conn.SetWriteDeadline(time.Now().Add(u.connect))
	bw := bufio.NewWriter(conn)
	if err := ctx.Request.Write(bw); err != nil || bw.Flush() != nil {
		conn.Close()
		return ErrBadGateway
	}
	_ = conn.SetWriteDeadline(time.Time{})
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(client net.Conn) { u.join(client, conn) })
	return nil
}

func (u *Upstream) dial() (net.Conn, error) {
	d := net.Dialer{Timeout: u.connect}
	if u.tls {
		return tls.DialWithDialer(&d, "tcp", u.addr, &tls.Config{ServerName: u.host})
	}
	return d.Dial("tcp", u.addr)
}

// join copies both ways until either side is done, then closes both.
func (u *Upstream) join(client, origin net.Conn) {
	if !u.open.add(origin) {
		origin.Close()
		return
	}
	defer u.open.remove(origin)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(origin, client); done <- struct{}{} }()
	go func() { _, _ = io.Copy(client, origin); done <- struct{}{} }()
	<-done
	client.Close()
	origin.Close()
	<-done
}
