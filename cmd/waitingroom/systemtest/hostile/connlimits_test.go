package hostile

// Connection and stream hoarding: one client address, or one user, cannot
// take an instance from everyone else. Clients act as different addresses by
// binding their sockets to distinct loopback sources (Linux routes all of
// 127/8 to lo).

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"waitingroom/cmd/waitingroom/systemtest"
)

// dialFrom opens a raw connection to in's public port from src; it is
// closed when the test ends.
func dialFrom(t testing.TB, in *systemtest.Instance, src string) net.Conn {
	t.Helper()
	c, err := systemtest.DialerFrom(src).Dial("tcp4", strings.TrimPrefix(in.Base, "http://"))
	if err != nil {
		t.Fatalf("dial from %s: %v", src, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// getFrom sends GET path from src with extra headers (name, value, …).
func getFrom(t testing.TB, in *systemtest.Instance, src, path string, headers ...string) systemtest.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", in.Base+path, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := systemtest.ClientFrom(src).Do(req)
	if err != nil {
		t.Fatalf("GET %s from %s: %v", path, src, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := systemtest.Response{Status: res.StatusCode, Header: res.Header, Raw: string(raw)}
	_ = json.Unmarshal(raw, &r.Body)
	return r
}

// expectRefusal reads what the server wrote to c before any request: the
// contract's 503 JSON with Retry-After, then the end of the connection.
func expectRefusal(t testing.TB, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s: no refusal: %v", what, err)
	}
	defer res.Body.Close()
	var body map[string]string
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != 503 || body["error"] != "unavailable" || body["message"] == "" ||
		res.Header.Get("Retry-After") == "" || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%s: refusal %d %v %v (%v), want 503 unavailable JSON with Retry-After", what, res.StatusCode, res.Header, body, err)
	}
}

// expectOpen checks that the server wrote nothing to c and did not close
// it. Called after later connections were refused: the listener accepts in
// order, so a refusal of c would already be there.
func expectOpen(t testing.TB, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	var b [1]byte
	n, err := c.Read(b[:])
	var ne net.Error
	if n != 0 || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("%s: read %d bytes, %v; want nothing (open and waiting)", what, n, err)
	}
	_ = c.SetReadDeadline(time.Time{})
}

// TestPerAddressConnectionCap: with WR_MAX_CONNS=300 the derived cap per
// address is 15. One address opening 40 idle sockets gets 15 and 25
// refusals; another address meanwhile gets normal answers and a stream.
// Streams count as connections: a third address holding 15 streams gets
// its 16th connection refused, and a slot comes back when one closes.
func TestPerAddressConnectionCap(t *testing.T) {
	systemtest.LongScenario(t)
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_MAX_CONNS": "300", "WR_FIRST_REQUEST_TIMEOUT": "1m", "WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	const perAddr = 15
	var idle []net.Conn
	for range 40 {
		idle = append(idle, dialFrom(t, in, "127.0.0.2"))
	}
	for i, c := range idle[perAddr:] {
		expectRefusal(t, c, "idle socket "+strconv.Itoa(perAddr+i+1))
	}
	for i, c := range idle[:perAddr] {
		expectOpen(t, c, "idle socket "+strconv.Itoa(i+1))
	}
	if got := in.RefusedBy("per_address"); got != 40-perAddr {
		t.Fatalf("refused per address = %v, want %d", got, 40-perAddr)
	}

	// Everyone else is served as usual while 127.0.0.2 is at its cap.
	if r := getFrom(t, in, "127.0.0.3", "/api/v1/products/1"); r.Status != 200 {
		t.Fatalf("another address while one is at its cap: %d %s", r.Status, r.Raw)
	}
	other := systemtest.SSEFrom(t, in, "127.0.0.3", "default", in.Enter(systemtest.User(1), "default").Str("queueToken"))

	// Streams from one address count against its cap.
	var streams []*systemtest.SSEStream
	for i := range perAddr {
		streams = append(streams, systemtest.SSEFrom(t, in, "127.0.0.4", "default", in.Enter(systemtest.User(i+2), "default").Str("queueToken")))
	}
	expectRefusal(t, dialFrom(t, in, "127.0.0.4"), "a connection beyond 15 streams")
	if got := in.RefusedBy("ceiling"); got != 0 {
		t.Fatalf("refused at the ceiling = %v, want 0: the per-address cap bit first", got)
	}
	// The other address's stream still follows the queue.
	in.SetTarget("default", 1)
	other.Until(t, "READY", systemtest.IsReady)

	// A stream that ends gives its slot back.
	streams[0].Res.Body.Close()
	systemtest.WaitFor(t, "a slot of 127.0.0.4 to come back", func() bool {
		c := dialFrom(t, in, "127.0.0.4")
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, "GET /api/v1/products/1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
			return false
		}
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == 200
	})
}

// TestIdleSocketsAreClosed: a socket that sends nothing, and one that sends
// a request line but never finishes its headers, are closed within
// WR_FIRST_REQUEST_TIMEOUT and give their slots back; a keep-alive
// connection that has been served stays open past it.
func TestIdleSocketsAreClosed(t *testing.T) {
	systemtest.LongScenario(t)
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_FIRST_REQUEST_TIMEOUT": "1s", "WR_MAX_CONNS_PER_IP": "3"})
	silent := dialFrom(t, in, "127.0.0.5")
	partial := dialFrom(t, in, "127.0.0.5")
	if _, err := io.WriteString(partial, "GET /api/v1/products/1 HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	served := dialFrom(t, in, "127.0.0.5")
	if _, err := io.WriteString(served, "GET /api/v1/products/1 HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(served)
	_ = served.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("served connection: %v %v", res, err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	// The address is at its cap of 3 now.
	expectRefusal(t, dialFrom(t, in, "127.0.0.5"), "a fourth connection")

	for name, c := range map[string]net.Conn{"silent": silent, "partial": partial} {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("%s socket still open 5 s after a 1 s deadline", name)
		}
		if len(b) != 0 {
			t.Fatalf("%s socket got %q, want a plain close", name, b)
		}
	}
	if got := in.Metric("waitingroom_connections_idle_closed_total"); got != 2 {
		t.Fatalf("idle closed = %v, want 2", got)
	}
	// The served keep-alive connection outlives the first-request deadline
	// and answers a second request.
	_ = served.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, err := br.Read(make([]byte, 1)); n != 0 || !isTimeout(err) {
		t.Fatalf("served connection after the deadline: %d %v, want still open", n, err)
	}
	_ = served.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(served, "GET /api/v1/products/1 HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if res, err := http.ReadResponse(br, nil); err != nil || res.StatusCode != 200 {
		t.Fatalf("second request on the served connection: %v %v", res, err)
	}
	// The closed sockets gave their slots back.
	if r := getFrom(t, in, "127.0.0.5", "/api/v1/products/1"); r.Status != 200 {
		t.Fatalf("after the idle sockets closed: %d %s", r.Status, r.Raw)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
}

// expectReplacedSSE reads s to its end: a reconnect event with reason
// "replaced" and a long retry hint, then the end of the stream.
func expectReplacedSSE(t testing.TB, s *systemtest.SSEStream, what string) {
	t.Helper()
	for {
		typ, data := s.Event(t)
		if typ == "status" {
			continue // a status sent before the replacement
		}
		if typ != "reconnect" || data["reason"] != "replaced" || data["message"] == "" {
			t.Fatalf("%s: event %s %v, want reconnect/replaced", what, typ, data)
		}
		break
	}
	if d, ok := s.R.Retry(); !ok || d < time.Minute {
		t.Fatalf("%s: retry hint %v %v, want a long one", what, d, ok)
	}
	if _, err := s.R.Next(); !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("%s: after the replacement: %v, want the end of the stream", what, err)
	}
}

// TestStreamsPerUserNewestWins: a user's fourth SSE stream (cap 3) ends the
// first with reconnect/replaced; the fourth works; another user's streams
// are untouched.
func TestStreamsPerUserNewestWins(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	other := in.Enter(systemtest.User(1), "default").Str("queueToken")
	theirs := []*systemtest.SSEStream{systemtest.OpenSSE(t, in, "default", other), systemtest.OpenSSE(t, in, "default", other)}
	mine := in.Enter(systemtest.User(2), "default").Str("queueToken")
	var streams []*systemtest.SSEStream
	for range 4 {
		s := systemtest.OpenSSE(t, in, "default", mine)
		s.Next(t)
		streams = append(streams, s)
	}
	expectReplacedSSE(t, streams[0], "the first of four")
	if got := in.Metric("waitingroom_stream_replaced_total"); got != 1 {
		t.Fatalf("replaced = %v, want 1", got)
	}
	if got := in.Parts.Hub.Connections(); got != 5 {
		t.Fatalf("hub connections = %d, want 5 (3 + 2)", got)
	}
	// The rest follow the queue: user1 admitted, user2 first in line, then
	// admitted too.
	for _, s := range theirs {
		s.Next(t)
	}
	in.SetTarget("default", 1)
	for _, s := range theirs {
		s.Until(t, "READY", systemtest.IsReady)
	}
	for _, s := range streams[1:] {
		s.Until(t, "position 1", func(_ string, m systemtest.StreamMsg) bool { return m.Position == 1 })
	}
	in.SetTarget("default", 2)
	for _, s := range streams[1:] {
		s.Until(t, "READY", systemtest.IsReady)
	}
}

// TestStreamsPerUserAcrossTransports: SSE and WebSocket count together;
// a replaced WebSocket gets a reconnect/replaced frame, then close 4409.
func TestStreamsPerUserAcrossTransports(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	mine := in.Enter(systemtest.User(1), "default").Str("queueToken")
	ws1 := systemtest.DialWS(t, in, "default", mine)
	systemtest.ReadWS(t, ws1)
	sse2 := systemtest.OpenSSE(t, in, "default", mine)
	sse2.Next(t)
	ws3 := systemtest.DialWS(t, in, "default", mine)
	systemtest.ReadWS(t, ws3)
	sse4 := systemtest.OpenSSE(t, in, "default", mine) // the fourth: ws1 goes
	sse4.Next(t)

	_ = ws1.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, b, err := ws1.ReadMessage()
	var m map[string]any
	if err != nil || json.Unmarshal(b, &m) != nil || m["type"] != "reconnect" || m["reason"] != "replaced" {
		t.Fatalf("replaced WebSocket: %s %v, want a reconnect/replaced frame", b, err)
	}
	_, _, err = ws1.ReadMessage()
	if !websocket.IsCloseError(err, 4409) {
		t.Fatalf("replaced WebSocket then: %v, want close 4409", err)
	}
	ws5 := systemtest.DialWS(t, in, "default", mine) // the fifth: sse2 goes
	systemtest.ReadWS(t, ws5)
	expectReplacedSSE(t, sse2, "the SSE stream replaced by a WebSocket")
	if got := in.Metric("waitingroom_stream_replaced_total"); got != 2 {
		t.Fatalf("replaced = %v, want 2", got)
	}
	// The three newest still work.
	in.SetTarget("default", 1)
	for _, c := range []*websocket.Conn{ws3, ws5} {
		for m := systemtest.ReadWS(t, c); m.Status != "READY"; m = systemtest.ReadWS(t, c) {
		}
	}
	sse4.Until(t, "READY", systemtest.IsReady)
}

// TestAllowListedAddressIsNotCapped: an address on the access allow list
// holds more connections than the cap; another address is still capped.
func TestAllowListedAddressIsNotCapped(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_MAX_CONNS_PER_IP": "2", "WR_FIRST_REQUEST_TIMEOUT": "1m"})
	// PUT reloads this instance's lists before it answers.
	if r := systemtest.Do(t, "PUT", in.Admin+"/admin/access", systemtest.TestAdminToken, map[string]any{"allow": []string{"127.0.0.6"}}); r.Status != 200 {
		t.Fatalf("PUT access: %d %s", r.Status, r.Raw)
	}
	var allowed []net.Conn
	for range 6 {
		allowed = append(allowed, dialFrom(t, in, "127.0.0.6"))
	}
	capped := []net.Conn{dialFrom(t, in, "127.0.0.7"), dialFrom(t, in, "127.0.0.7"), dialFrom(t, in, "127.0.0.7")}
	expectRefusal(t, capped[2], "the third connection of a capped address")
	for i, c := range append(allowed, capped[:2]...) {
		expectOpen(t, c, "connection "+strconv.Itoa(i+1))
	}
	if got := in.RefusedBy("per_address"); got != 1 {
		t.Fatalf("refused per address = %v, want 1", got)
	}
}

// TestTrustedProxyStreamsPerClient: a trusted proxy's own connections are
// not capped per address (they carry many clients), but each forwarded
// client's open streams are, SSE and WebSocket together: the one past the
// cap gets 429 JSON before the stream starts; other clients behind the
// same proxy are unaffected; a closed stream gives its slot back.
func TestTrustedProxyStreamsPerClient(t *testing.T) {
	systemtest.LongScenario(t)
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_TRUSTED_PROXIES": "127.0.0.8", "WR_MAX_CONNS_PER_IP": "3", "WR_FIRST_REQUEST_TIMEOUT": "1m"})
	const proxy, client1, client2 = "127.0.0.8", "198.51.100.7", "198.51.100.8"
	for i := range 5 {
		expectOpen(t, dialFrom(t, in, proxy), "proxy connection "+strconv.Itoa(i+1))
	}
	var streams []*systemtest.SSEStream
	for i := range 3 {
		streams = append(streams, systemtest.SSEFrom(t, in, proxy, "default", in.Enter(systemtest.User(i+1), "default").Str("queueToken"), "X-Real-IP", client1))
	}
	tok := in.Enter(systemtest.User(10), "default").Str("queueToken")
	r := getFrom(t, in, proxy, "/api/v1/rooms/default/events", "Authorization", "Bearer "+tok, "X-Real-IP", client1)
	if r.Status != 429 || r.Str("error") != "rate_limited" || r.Header.Get("Retry-After") == "" || strings.Contains(r.Raw, client1) {
		t.Fatalf("a 4th stream of one forwarded client: %d %v %s, want 429 rate_limited JSON", r.Status, r.Header, r.Raw)
	}
	// The WebSocket handshake is refused the same way, before the upgrade.
	url := strings.Replace(in.Base, "http://", "ws://", 1) + "/api/v1/rooms/default/ws?token=" + tok
	d := websocket.Dialer{NetDialContext: systemtest.DialerFrom(proxy).DialContext, HandshakeTimeout: 5 * time.Second}
	if _, res, err := d.Dial(url, http.Header{"X-Real-IP": {client1}}); err == nil || res == nil || res.StatusCode != 429 {
		t.Fatalf("a WebSocket of the same client: %v %v, want 429", res, err)
	}
	// Another client behind the same proxy streams as usual.
	systemtest.SSEFrom(t, in, proxy, "default", tok, "X-Real-IP", client2)
	ws := d
	c, _, err := ws.DialContext(context.Background(), url, http.Header{"X-Real-IP": {client2}})
	if err != nil {
		t.Fatalf("a WebSocket of another client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	systemtest.ReadWS(t, c)
	if got := in.Metric("waitingroom_rate_limited_total"); got != 2 {
		t.Fatalf("rate limited = %v, want 2 (the SSE and the WebSocket refusal)", got)
	}
	// A stream that ends gives its slot back (the server notices the
	// closed client within seconds).
	streams[0].Res.Body.Close()
	tok11 := in.Enter(systemtest.User(11), "default").Str("queueToken")
	systemtest.WaitFor(t, "client1's slot to come back", func() bool {
		req, _ := http.NewRequest("GET", in.Base+"/api/v1/rooms/default/events", nil)
		req.Header.Set("Authorization", "Bearer "+tok11)
		req.Header.Set("X-Real-IP", client1)
		res, err := systemtest.ClientFrom(proxy).Do(req)
		if err != nil {
			return false
		}
		defer res.Body.Close()
		return res.StatusCode == 200
	})
}
