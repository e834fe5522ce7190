package gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"waitingroom/cmd/waitingroom/systemtest"
)

// The gateway's transport against real sockets: what reaches the origin,
// what the origin can make the gateway send, and what either side can make
// it hold.

// pathLog is what an origin was asked, "METHOD /path" per request.
type pathLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *pathLog) add(r *http.Request) {
	l.mu.Lock()
	l.seen = append(l.seen, r.Method+" "+r.URL.Path)
	l.mu.Unlock()
}

func (l *pathLog) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, v := range l.seen {
		if v == s {
			return true
		}
	}
	return false
}

// startLoggedOrigin is StartOrigin's site with every request logged.
func startLoggedOrigin(t *testing.T) (*systemtest.Origin, *pathLog) {
	t.Helper()
	o, log := &systemtest.Origin{}, &pathLog{}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		o.Serve(w, r)
	}))
	t.Cleanup(o.Server.Close)
	return o, log
}

// rawAnswer writes an answer to r byte for byte on c; false closes c.
type rawAnswer func(c net.Conn, r *http.Request) bool

// rawOrigin is an origin that writes what no server library would: the
// gateway's parser and framing are judged on it. Unknown paths get 200.
type rawOrigin struct {
	url     string
	ln      net.Listener
	answers map[string]rawAnswer
	log     pathLog
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

func startRawOrigin(t *testing.T, answers map[string]rawAnswer) *rawOrigin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &rawOrigin{url: "http://" + ln.Addr().String(), ln: ln, answers: answers, conns: map[net.Conn]struct{}{}}
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			o.mu.Lock()
			o.conns[c] = struct{}{}
			o.mu.Unlock()
			o.wg.Add(1)
			go o.serve(c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		o.mu.Lock()
		for c := range o.conns {
			c.Close()
		}
		o.mu.Unlock()
		o.wg.Wait()
	})
	return o
}

func (o *rawOrigin) serve(c net.Conn) {
	defer o.wg.Done()
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		r, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		o.log.add(r)
		answer, ok := o.answers[r.URL.Path]
		if !ok {
			answer = func(c net.Conn, r *http.Request) bool {
				_, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				return err == nil
			}
		}
		keep := answer(c, r)
		_, _ = io.Copy(io.Discard, r.Body)
		if !keep {
			return
		}
	}
}

// fixed answers the same bytes to every request.
func fixed(raw string) rawAnswer {
	return func(c net.Conn, _ *http.Request) bool {
		_, err := io.WriteString(c, raw)
		return err == nil
	}
}

// dialGateway dials the instance's public port.
func dialGateway(t *testing.T, in *systemtest.Instance) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(in.Base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	return c, bufio.NewReader(c)
}

// readAnswer reads one answer and its whole body.
func readAnswer(t *testing.T, br *bufio.Reader, method string) (*http.Response, []byte) {
	t.Helper()
	res, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading the answer's body: %v", err)
	}
	return res, body
}

// wantClosed asserts the gateway closed the connection: nothing more is
// answered on it.
func wantClosed(t *testing.T, br *bufio.Reader, what string) {
	t.Helper()
	if b, err := br.ReadByte(); err == nil {
		rest, _ := br.Peek(br.Buffered())
		t.Fatalf("%s: the connection stayed open and answered more: %q", what, append([]byte{b}, rest...))
	} else if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("%s: want the connection closed, got %v", what, err)
	}
}

const wsKey = "dGhlIHNhbXBsZSBub25jZQ==" // RFC 6455's example key

// TestGatewayUpgradeSmuggling: an upgrade the origin answers without
// switching is an ordinary answer, and the connection is closed after
// it: a request pipelined behind it never reaches the origin.
func TestGatewayUpgradeSmuggling(t *testing.T) {
	o, log := startLoggedOrigin(t)
	raw := startRawOrigin(t, map[string]rawAnswer{
		"/liar": fixed("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: forged\r\n\r\n"),
	})
	in := systemtest.GatewayInstance(t, o, nil)
	host := strings.TrimPrefix(in.Base, "http://")
	c, br := dialGateway(t, in)
	fmt.Fprintf(c, "GET /hello HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n", host, wsKey)
	fmt.Fprintf(c, "POST /checkout/pay HTTP/1.1\r\nHost: %s\r\nWaitingroom-Pass: forged\r\nX-Forwarded-For: 6.6.6.6\r\nContent-Length: 2\r\n\r\n{}", host)
	res, _ := readAnswer(t, br, "GET")
	if res.StatusCode != 200 {
		t.Fatalf("the upgrade the origin refused: %d, want its 200", res.StatusCode)
	}
	wantClosed(t, br, "after an upgrade the origin did not switch")
	if !log.has("GET /hello") || log.has("POST /checkout/pay") {
		t.Fatalf("the origin saw %v; want GET /hello and never the pipelined POST /checkout/pay", log.seen)
	}

	// A handshake without a valid key or version is refused here.
	for _, bad := range []string{"Sec-WebSocket-Version: 13\r\n", "Sec-WebSocket-Key: short\r\nSec-WebSocket-Version: 13\r\n",
		"Sec-WebSocket-Key: " + wsKey + "\r\nSec-WebSocket-Version: 8\r\n"} {
		c, br := dialGateway(t, in)
		fmt.Fprintf(c, "GET /ws/echo HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n%s\r\n", host, bad)
		if res, body := readAnswer(t, br, "GET"); res.StatusCode != 400 || !strings.Contains(string(body), "invalid_request") {
			t.Fatalf("handshake with %q: %d %s, want 400 invalid_request", bad, res.StatusCode, body)
		}
	}

	// An origin that claims a switch without the accept key for this
	// handshake is a bad gateway, not a tunnel.
	liar := systemtest.GatewayInstance(t, o, map[string]string{"WR_UPSTREAM": raw.url})
	c, br = dialGateway(t, liar)
	fmt.Fprintf(c, "GET /liar HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n", wsKey)
	if res, body := readAnswer(t, br, "GET"); res.StatusCode != 502 {
		t.Fatalf("101 with a forged accept key: %d %s, want 502", res.StatusCode, body)
	}
}

// dialTunnel opens a WebSocket through the gateway as if from ip (behind a
// trusted proxy), and reads the origin's first message.
func dialTunnel(t *testing.T, in *systemtest.Instance, ip string) (*websocket.Conn, int) {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	conn, res, err := d.Dial("ws"+strings.TrimPrefix(in.Base, "http")+"/ws/echo", http.Header{"X-Real-IP": {ip}})
	if err != nil {
		if res != nil {
			return nil, res.StatusCode
		}
		t.Fatalf("dial from %s: %v", ip, err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, first, err := conn.ReadMessage(); err != nil || string(first) != "pass=false" {
		t.Fatalf("first message %q, %v", first, err)
	}
	return conn, 101
}

// TestGatewayTunnelCaps: tunnels are capped per client address and in
// total; an address at its cap does not keep another from its tunnel, and
// a closed tunnel gives its slot back.
func TestGatewayTunnelCaps(t *testing.T) {
	o := systemtest.StartOrigin(t)
	in := systemtest.GatewayInstance(t, o, systemtest.BehindProxy(map[string]string{"WR_MAX_TUNNELS_PER_IP": "2", "WR_MAX_TUNNELS": "3"}))
	a1, _ := dialTunnel(t, in, "203.0.113.1")
	dialTunnel(t, in, "203.0.113.1")
	if _, code := dialTunnel(t, in, "203.0.113.1"); code != 429 {
		t.Fatalf("a third tunnel from one address: %d, want 429", code)
	}
	if _, code := dialTunnel(t, in, "203.0.113.2"); code != 101 {
		t.Fatalf("another address while the first is at its cap: %d, want 101", code)
	}
	if _, code := dialTunnel(t, in, "203.0.113.3"); code != 503 {
		t.Fatalf("past the total cap: %d, want 503", code)
	}
	if n := in.Metric("waitingroom_gateway_tunnels"); n != 3 {
		t.Fatalf("waitingroom_gateway_tunnels = %v, want 3", n)
	}
	if n := in.Metric("waitingroom_gateway_tunnels_refused_total"); n != 2 {
		t.Fatalf("waitingroom_gateway_tunnels_refused_total = %v, want 2", n)
	}
	a1.Close()
	systemtest.WaitFor(t, "the closed tunnel counted out", func() bool { return in.Metric("waitingroom_gateway_tunnels") == 2 })
	if _, code := dialTunnel(t, in, "203.0.113.1"); code != 101 {
		t.Fatalf("after one of its tunnels closed: %d, want 101", code)
	}
}

// TestGatewayTunnelIdle: a tunnel with no byte either way for
// WR_TUNNEL_IDLE_TIMEOUT is closed; one in use is not.
func TestGatewayTunnelIdle(t *testing.T) {
	o := systemtest.StartOrigin(t)
	in := systemtest.GatewayInstance(t, o, systemtest.BehindProxy(map[string]string{"WR_TUNNEL_IDLE_TIMEOUT": "1s"}))
	busy, _ := dialTunnel(t, in, "203.0.113.1")
	idle, _ := dialTunnel(t, in, "203.0.113.2")
	for i := 0; in.Metric("waitingroom_gateway_tunnels_idle_closed_total") == 0; i++ {
		if i > 200 {
			t.Fatal("the idle tunnel was not closed")
		}
		msg := []byte("m" + strconv.Itoa(i))
		if err := busy.WriteMessage(websocket.TextMessage, msg); err != nil {
			t.Fatalf("the busy tunnel: %v", err)
		}
		if _, back, err := busy.ReadMessage(); err != nil || !bytes.Equal(back, msg) {
			t.Fatalf("the busy tunnel's echo: %q, %v", back, err)
		}
		time.Sleep(100 * time.Millisecond) // the busy tunnel's pace: well inside the idle time
	}
	_ = idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, _, err := idle.ReadMessage(); err == nil || errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "timeout") {
		t.Fatalf("the idle tunnel: %v, want it closed", err)
	}
	if n := in.Metric("waitingroom_gateway_tunnels"); n != 1 {
		t.Fatalf("open tunnels: %v, want the busy one", n)
	}
}

// bigAnswer sends size bytes of body in the given framing, reporting on
// blocked how much it had written when a write first waited a second
// (the visitor is not reading), and on done when it wrote everything.
func bigAnswer(framing string, size int64, blocked, done chan<- int64) rawAnswer {
	return func(c net.Conn, _ *http.Request) bool {
		head := "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
		switch framing {
		case "length":
			head += "Content-Length: " + strconv.FormatInt(size, 10) + "\r\n"
		case "chunked":
			head += "Transfer-Encoding: chunked\r\n"
		case "close":
			head += "Connection: close\r\n"
		}
		var written int64
		reported := false
		write := func(b []byte) bool {
			for len(b) > 0 {
				_ = c.SetWriteDeadline(time.Now().Add(time.Second))
				n, err := c.Write(b)
				written += int64(n)
				b = b[n:]
				var ne net.Error
				switch {
				case errors.As(err, &ne) && ne.Timeout():
					if !reported {
						reported = true
						blocked <- written
					}
				case err != nil:
					return false
				}
			}
			return true
		}
		if !write([]byte(head + "\r\n")) {
			return false
		}
		piece := bytes.Repeat([]byte("x"), 32<<10)
		for sent := int64(0); sent < size; sent += int64(len(piece)) {
			out := piece
			if framing == "chunked" {
				out = append([]byte(strconv.FormatInt(int64(len(piece)), 16)+"\r\n"), append(piece, '\r', '\n')...)
			}
			if !write(out) {
				return false
			}
		}
		if framing == "chunked" && !write([]byte("0\r\n\r\n")) {
			return false
		}
		done <- written
		return framing != "close"
	}
}

// TestGatewayResponseBackPressure: whatever the framing of the origin's
// answer, a visitor who does not read holds the origin's writes: the
// gateway takes no more than the sockets' buffers and its own small one,
// and the whole body arrives once the visitor reads.
func TestGatewayResponseBackPressure(t *testing.T) {
	systemtest.LongScenario(t)
	bound := socketBuffers(t)
	size := max(int64(64<<20), 2*bound) // more than the buffers hold, or the test would prove nothing
	blocked, done := make(chan int64, 3), make(chan int64, 3)
	raw := startRawOrigin(t, map[string]rawAnswer{
		"/length": bigAnswer("length", size, blocked, done), "/chunked": bigAnswer("chunked", size, blocked, done),
		"/close": bigAnswer("close", size, blocked, done),
	})
	in := systemtest.GatewayInstance(t, systemtest.StartOrigin(t), map[string]string{"WR_UPSTREAM": raw.url})
	for _, path := range []string{"/length", "/chunked", "/close"} {
		t.Run(path[1:], func(t *testing.T) { backPressure(t, in, path, size, bound, blocked, done) })
	}
}

// socketBuffers bounds what the sockets between an origin and a visitor
// who reads nothing can hold on this machine, besides the gateway: the
// origin's send buffer and the gateway's receive buffer (origin side),
// the gateway's send buffer (visitor side; the visitor's receive buffer
// is set to 64 KiB), each at most the kernel's autotuning maximum
// (tcp_wmem, tcp_rmem), plus 1 MiB for the gateway's own and the
// visitor's buffers. On loopback these are the kernel's settings, which
// differ from machine to machine (4 to 32 MiB for tcp_rmem seen here).
func socketBuffers(t *testing.T) int64 {
	t.Helper()
	most := func(name string) int64 {
		raw, err := os.ReadFile("/proc/sys/net/ipv4/" + name)
		f := strings.Fields(string(raw))
		if err != nil || len(f) != 3 {
			t.Fatalf("reading %s: %q %v", name, raw, err)
		}
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	return most("tcp_rmem") + 2*most("tcp_wmem") + 1<<20
}

// backPressure asks for path without reading, then reads it whole.
func backPressure(t *testing.T, in *systemtest.Instance, path string, size, bound int64, blocked, done <-chan int64) {
	c, br := dialGateway(t, in)
	_ = c.(*net.TCPConn).SetReadBuffer(64 << 10)
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
	select {
	case n := <-blocked:
		if n > bound {
			t.Fatalf("%s: the origin wrote %d MiB before a visitor who reads nothing held it; want under %d MiB", path, n>>20, bound>>20)
		}
	case n := <-done:
		t.Fatalf("%s: the origin wrote all %d MiB to a visitor who reads nothing: the gateway held the answer", path, n>>20)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: the origin neither blocked nor finished", path)
	}
	res, err := http.ReadResponse(br, &http.Request{Method: "GET"})
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, res.Body)
	if err != nil || n != size {
		t.Fatalf("%s: read %d bytes, %v; want all %d", path, n, err, size)
	}
	<-done
	c.Close()
}

// TestGatewayRequestBodies: a protected request without a pass is refused
// before its body is read (and its connection closed); other bodies
// stream to the origin as they arrive; the waiting room's own API reads
// at most WR_BODY_LIMIT, a chunked body included.
func TestGatewayRequestBodies(t *testing.T) {
	got := make(chan struct{}, 2)
	raw := startRawOrigin(t, map[string]rawAnswer{"/upload": func(c net.Conn, r *http.Request) bool {
		first := make([]byte, 1024)
		if _, err := io.ReadFull(r.Body, first); err != nil {
			return false
		}
		got <- struct{}{}
		n, _ := io.Copy(io.Discard, r.Body)
		body := strconv.FormatInt(n+1024, 10)
		_, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
		return err == nil
	}})
	in := systemtest.GatewayInstance(t, systemtest.StartOrigin(t), map[string]string{"WR_UPSTREAM": raw.url, "WR_UPSTREAM_BODY_LIMIT": strconv.Itoa(32 << 20)})
	host := strings.TrimPrefix(in.Base, "http://")

	t.Run("refused unread", func(t *testing.T) {
		// 32 MiB announced, 64 KiB sent: the refusal comes at once.
		c, br := dialGateway(t, in)
		fmt.Fprintf(c, "POST /checkout/pay HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", host, 32<<20)
		_, _ = c.Write(bytes.Repeat([]byte("x"), 64<<10))
		if res, body := readAnswer(t, br, "POST"); res.StatusCode != 403 || !strings.Contains(string(body), "pass_required") {
			t.Fatalf("protected upload without a pass: %d %s, want 403 pass_required before the body", res.StatusCode, body)
		}
		wantClosed(t, br, "after refusing a request whose body was not read")
		if raw.log.has("POST /checkout/pay") {
			t.Fatal("the origin saw the protected request")
		}
	})

	// A body streams to the origin: the origin reads its start before the
	// client has sent the rest, with a length and chunked.
	t.Run("streamed", func(t *testing.T) {
		for _, chunked := range []bool{false, true} {
			pr, pw := io.Pipe()
			req, _ := http.NewRequest("POST", in.Base+"/upload", pr)
			if !chunked {
				req.ContentLength = 1 << 20
			}
			answered := make(chan string, 1)
			go func() {
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					answered <- err.Error()
					return
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				answered <- strconv.Itoa(res.StatusCode) + " " + string(b)
			}()
			_, _ = pw.Write(bytes.Repeat([]byte("a"), 16<<10))
			select {
			case <-got:
			case a := <-answered:
				t.Fatalf("chunked=%v: answered %s before the origin read the body's start", chunked, a)
			case <-time.After(15 * time.Second):
				pw.CloseWithError(errors.New("test over"))
				t.Fatalf("chunked=%v: the origin saw nothing of a body the client is still sending: the gateway holds it", chunked)
			}
			_, _ = pw.Write(bytes.Repeat([]byte("b"), 1<<20-16<<10))
			pw.Close()
			if a := <-answered; a != "200 "+strconv.Itoa(1<<20) {
				t.Fatalf("chunked=%v: %s, want 200 and the origin's count of 1 MiB", chunked, a)
			}
		}
	})

	// The waiting room's own API: a chunked body past WR_BODY_LIMIT (16 KiB)
	// is 413 after at most that much, and the connection closed.
	t.Run("own API bounded", func(t *testing.T) {
		c, br := dialGateway(t, in)
		fmt.Fprintf(c, "POST /_wr/api/v1/auth/login HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", host)
		for range 8 {
			fmt.Fprintf(c, "1000\r\n%s\r\n", bytes.Repeat([]byte(" "), 4096))
		}
		if res, body := readAnswer(t, br, "POST"); res.StatusCode != 413 || !strings.Contains(string(body), "payload_too_large") {
			t.Fatalf("32 KiB chunked to /_wr/: %d %s, want 413", res.StatusCode, body)
		}
		wantClosed(t, br, "after a 413 to a chunked body")
		// A small chunked body there is read whole.
		c, br = dialGateway(t, in)
		login := fmt.Sprintf(`{"loginId":"user1","password":%q}`, systemtest.TestPassword)
		fmt.Fprintf(c, "POST /_wr/api/v1/auth/login HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", host, len(login), login)
		if res, body := readAnswer(t, br, "POST"); res.StatusCode != 200 || !strings.Contains(string(body), "accessToken") {
			t.Fatalf("chunked login to /_wr/: %d %s, want 200", res.StatusCode, body)
		}
	})
	// An announced body past WR_UPSTREAM_BODY_LIMIT is 413 unread (the
	// server reads at most its first 8 KiB before the handler runs).
	t.Run("announced too large", func(t *testing.T) {
		c, br := dialGateway(t, in)
		fmt.Fprintf(c, "POST /upload HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", host, 33<<20)
		_, _ = c.Write(bytes.Repeat([]byte("x"), 16<<10))
		if res, _ := readAnswer(t, br, "POST"); res.StatusCode != 413 {
			t.Fatalf("33 MiB announced to the origin: %d, want 413", res.StatusCode)
		}
		wantClosed(t, br, "after a 413 to the origin's path")
	})
}

// TestGatewayOriginAnswersStrictly: interim answers are skipped; a switch
// nobody asked for, a bare CR in a header and two lengths are 502; the
// origin cannot set the waiting room's cookies.
func TestGatewayOriginAnswersStrictly(t *testing.T) {
	raw := startRawOrigin(t, map[string]rawAnswer{
		"/early":       fixed("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfinal"),
		"/switch":      fixed("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n"),
		"/bare-cr":     fixed("HTTP/1.1 200 OK\r\nX-A: a\rX-B: b\r\nContent-Length: 2\r\n\r\nok"),
		"/two-lengths": fixed("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 7\r\n\r\nokokokok"),
		"/cookies": fixed("HTTP/1.1 200 OK\r\nSet-Cookie: wr_queue=x; Path=/\r\nSet-Cookie: __Host-wr_queue_sale=x; Path=/; Secure\r\n" +
			"Set-Cookie: wr_entry_sale=x\r\nSet-Cookie: wr_session_sale=x\r\nSet-Cookie: wr_visitor=x\r\nSet-Cookie: __Host-wr_visitor=x\r\n" +
			"Set-Cookie: theirs=1; Path=/\r\nSet-Cookie: wr_theirs=2\r\nContent-Length: 2\r\n\r\nok"),
	})
	in := systemtest.GatewayInstance(t, systemtest.StartOrigin(t), map[string]string{"WR_UPSTREAM": raw.url})
	t.Run("interim", func(t *testing.T) {
		res, err := http.Get(in.Base + "/early")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || string(body) != "final" {
			t.Fatalf("after 100 and 103: %d %q, want the final 200", res.StatusCode, body)
		}
	})
	for _, path := range []string{"/switch", "/bare-cr", "/two-lengths"} {
		t.Run(path[1:], func(t *testing.T) {
			if code, _, m := systemtest.Call(t, systemtest.Visitor(t), "GET", in.Base+path, ""); code != 502 || m["error"] != "bad_gateway" {
				t.Fatalf("%s: %d %v, want 502 bad_gateway", path, code, m)
			}
		})
	}
	res, err := http.Get(in.Base + "/cookies")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var names []string
	for _, c := range res.Cookies() {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "theirs,wr_theirs" {
		t.Fatalf("cookies the origin set through the gateway: %v, want only its own (theirs, wr_theirs)", names)
	}
}

// TestGatewayLongDownload: WR_UPSTREAM_TIMEOUT bounds the wait for the
// origin's headers and each silence in its body, not the whole body: a
// download longer than it arrives whole; one that stalls longer is cut
// (the connection closed, never a complete-looking answer; a small one,
// read whole before it is sent, is 504).
func TestGatewayLongDownload(t *testing.T) {
	systemtest.LongScenario(t)
	stall := make(chan struct{})
	raw := startRawOrigin(t, map[string]rawAnswer{
		"/paced": func(c net.Conn, _ *http.Request) bool {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
			for range 16 {
				io.WriteString(c, "4\r\npart\r\n")
				time.Sleep(250 * time.Millisecond) // the origin's pace: 4 s in all, twice the timeout
			}
			_, err := io.WriteString(c, "0\r\n\r\n")
			return err == nil
		},
		"/stalled": func(c net.Conn, _ *http.Request) bool {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\n\r\n"+strings.Repeat("p", 20<<10))
			<-stall
			return false
		},
		"/stalled-small": func(c net.Conn, _ *http.Request) bool {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
			<-stall
			return false
		},
	})
	// Before the origin's own cleanup, which waits for its answers.
	t.Cleanup(func() { close(stall) })
	// Gaps of 250 ms against a 2 s WR_UPSTREAM_TIMEOUT (headers, then
	// each gap): on a loaded machine a 1 s timeout was once missed by
	// scheduling alone, between two chunks.
	in := systemtest.GatewayInstance(t, systemtest.StartOrigin(t), map[string]string{"WR_UPSTREAM": raw.url, "WR_UPSTREAM_TIMEOUT": "2s"})
	res, err := http.Get(in.Base + "/paced")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || err != nil || string(body) != strings.Repeat("part", 16) {
		t.Errorf("a 4 s download: %d %q, %v; want all of it", res.StatusCode, body, err)
	}
	res, err = http.Get(in.Base + "/stalled")
	if err != nil {
		t.Fatal(err)
	}
	body, err = io.ReadAll(res.Body)
	res.Body.Close()
	if err == nil {
		t.Fatalf("a body the origin stopped sending: %d bytes and no error, want the connection cut", len(body))
	}
	// A small answer is read whole before it is sent: cut short, it is 504.
	if code, _, m := systemtest.Call(t, systemtest.Visitor(t), "GET", in.Base+"/stalled-small", ""); code != 504 || m["error"] != "gateway_timeout" {
		t.Fatalf("a small answer the origin stopped sending: %d %v, want 504", code, m)
	}
}

// TestGatewayStripsRerouting: headers that let a client reroute past the
// route match, and any spelled with "_" like one the gateway sets or
// removes, never reach the origin; a duplicate Host is 400; Forwarded's
// values are quoted when they are not tokens.
func TestGatewayStripsRerouting(t *testing.T) {
	var seen http.Header
	var mu sync.Mutex
	raw := startRawOrigin(t, map[string]rawAnswer{"/echo": func(c net.Conn, r *http.Request) bool {
		mu.Lock()
		seen = r.Header.Clone()
		mu.Unlock()
		_, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		return err == nil
	}})
	in := systemtest.GatewayInstance(t, systemtest.StartOrigin(t), map[string]string{"WR_UPSTREAM": raw.url})
	req, _ := http.NewRequest("GET", in.Base+"/echo", nil)
	for _, h := range []string{"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override", "X-Original-URL", "X-Rewrite-URL",
		"Waitingroom_Pass", "WAITINGROOM_PASS", "X_Forwarded_For", "x_forwarded_host", "X-Forwarded_Proto", "X_Request_Id", "X_Entry_Token", "Keep_Alive"} {
		req.Header[h] = []string{"POST"}
	}
	req.Header["X_Theirs"] = []string{"kept"}
	req.Host = "[::1]:8443"
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	var leaked []string
	for name := range seen {
		n := strings.ToLower(strings.ReplaceAll(name, "_", "-"))
		if strings.Contains(n, "override") || strings.Contains(n, "original") || strings.Contains(n, "rewrite") || n == "x-http-method" ||
			strings.Contains(name, "_") && name != "X_theirs" {
			leaked = append(leaked, name)
		}
	}
	if len(leaked) > 0 || seen.Get("X_theirs") != "kept" || seen.Get("X-Forwarded-For") != "127.0.0.1" || seen.Get("Waitingroom-Pass") != "" {
		t.Errorf("at the origin: leaked %v; headers %v", leaked, seen)
	}
	if got, want := seen.Get("Forwarded"), `for=127.0.0.1;proto=http;host="[::1]:8443"`; got != want {
		t.Errorf("Forwarded: %s, want %s", got, want)
	}

	c, br := dialGateway(t, in)
	fmt.Fprintf(c, "GET /echo HTTP/1.1\r\nHost: shop.example\r\nHost: evil.example\r\n\r\n")
	if res, body := readAnswer(t, br, "GET"); res.StatusCode != 400 || !strings.Contains(string(body), "invalid_request") {
		t.Fatalf("two Host headers: %d %s, want 400 invalid_request", res.StatusCode, body)
	}
	wantClosed(t, br, "after two Host headers")
}
