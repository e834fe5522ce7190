package origin

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestLocalLocation: an origin's redirect naming the origin itself comes
// back through the gateway; any other is left alone.
func TestLocalLocation(t *testing.T) {
	u := &Client{addr: "127.0.0.1:8000"}
	for _, tc := range []struct{ loc, host, want string }{
		{"http://127.0.0.1:8000/checkout/", "shop.example", "/checkout/"},
		{"http://127.0.0.1:8000", "shop.example", "/"},
		{"http://127.0.0.1:8000/a?b=1#c", "shop.example", "/a?b=1#c"},
		{"//127.0.0.1:8000/checkout/", "shop.example", "/checkout/"},
		// nginx's default: the visitor's host name at the origin's port.
		{"http://localhost:8000/checkout/", "localhost:8080", "/checkout/"},
		{"http://LOCALHOST:8000/x", "localhost", "/x"},
		// A path that would read as a host is not made of one.
		{"http://127.0.0.1:8000//evil.example/x", "shop.example", "/evil.example/x"},
		// Not the origin: kept.
		{"http://localhost:8080/checkout/", "localhost:8080", "http://localhost:8080/checkout/"},
		{"https://pay.example/x", "shop.example", "https://pay.example/x"},
		{"http://127.0.0.1:8001/x", "shop.example", "http://127.0.0.1:8001/x"},
		{"http://127.0.0.1/x", "shop.example", "http://127.0.0.1/x"},
		{"/checkout/", "shop.example", "/checkout/"},
		{"checkout/", "shop.example", "checkout/"},
		{"ftp://127.0.0.1:8000/x", "shop.example", "ftp://127.0.0.1:8000/x"},
		{"http://user@127.0.0.1:8000/x", "shop.example", "http://user@127.0.0.1:8000/x"},
		{"http://%zz", "shop.example", "http://%zz"},
	} {
		if got := string(u.localLocation([]byte(tc.loc), []byte(tc.host))); got != tc.want {
			t.Errorf("Location %q (Host %q) = %q, want %q", tc.loc, tc.host, got, tc.want)
		}
	}
	tls := &Client{addr: "shop.internal:443", tls: true}
	if got := string(tls.localLocation([]byte("https://shop.internal/cart"), []byte("shop.example"))); got != "/cart" {
		t.Errorf("https origin, default port: %q, want /cart", got)
	}
}

// fakeOrigin answers every request on ln with answer, and sends the heads
// it read on heads.
func fakeOrigin(t *testing.T, answer string) (addr string, heads <-chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan string, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					var head strings.Builder
					for {
						l, err := br.ReadString('\n')
						if err != nil {
							return
						}
						head.WriteString(l)
						if l == "\r\n" {
							break
						}
					}
					ch <- head.String()
					if _, err := io.WriteString(c, answer); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), ch
}

// TestForwardPrepared: what Prepare removes never reaches the origin, the
// forwarding headers do, and the answer comes back with the waiting
// room's cookies and the hop-by-hop headers dropped.
func TestForwardPrepared(t *testing.T) {
	addr, heads := fakeOrigin(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: X-Hop\r\nX-Hop: 1\r\n"+
		"Set-Cookie: wr_visit_a=1\r\nSet-Cookie: app=2\r\n\r\nok")
	u, err := New(Config{URL: "http://" + addr, ConnectTimeout: time.Second, Timeout: 5 * time.Second, BodyLimit: 1 << 10, PassHeader: "Test-Pass"})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	own := func(name []byte) bool { return bytes.HasPrefix(name, []byte("wr_")) }
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod("GET")
	ctx.Request.SetRequestURI("/a?b=1")
	ctx.Request.Header.SetHost("shop.example")
	for _, h := range [][2]string{{"Test-Pass", "forged"}, {"Test_Pass", "forged"}, {"X-Original-URL", "/admin"},
		{"X_Forwarded_For", "10.0.0.1"}, {"Connection", "X-Private"}, {"X-Private", "1"}, {"Cookie", "wr_visit_a=t; app=1"}} {
		ctx.Request.Header.Set(h[0], h[1])
	}
	u.Prepare(&ctx.Request, Forwarded{Client: net.ParseIP("192.0.2.1"), Peer: net.ParseIP("192.0.2.1"), Proto: "https", Host: "shop.example"}, own)
	if err := u.Forward(&ctx, own); err != nil {
		t.Fatal(err)
	}
	head := strings.ToLower(<-heads)
	for _, gone := range []string{"forged", "x-original-url", "x_forwarded_for", "x-private", "wr_visit_a"} {
		if strings.Contains(head, gone) {
			t.Errorf("%q reached the origin:\n%s", gone, head)
		}
	}
	for _, set := range []string{"get /a?b=1 http/1.1\r\n", "host: shop.example\r\n", "x-forwarded-for: 192.0.2.1\r\n",
		"x-forwarded-proto: https\r\n", "forwarded: for=192.0.2.1;proto=https;host=shop.example\r\n", "cookie: app=1\r\n"} {
		if !strings.Contains(head, set) {
			t.Errorf("%q missing:\n%s", set, head)
		}
	}
	resp := &ctx.Response
	if resp.StatusCode() != 200 || string(resp.Body()) != "ok" || len(resp.Header.Peek("X-Hop")) > 0 {
		t.Errorf("answer %d %q, X-Hop %q", resp.StatusCode(), resp.Body(), resp.Header.Peek("X-Hop"))
	}
	var cookies []string
	resp.Header.VisitAllCookie(func(k, _ []byte) { cookies = append(cookies, string(k)) })
	if len(cookies) != 1 || cookies[0] != "app" {
		t.Errorf("cookies set: %q, want app only", cookies)
	}
}

// TestTunnelCaps: a tunnel is refused past the cap per address or the
// total, counted again once released, and refused after Close.
func TestTunnelCaps(t *testing.T) {
	var open tunnels
	c := TunnelConfig{Max: 3, PerAddr: 2}
	for _, step := range []struct {
		addr string
		want error
	}{{"a", nil}, {"a", nil}, {"a", ErrTunnelsPerAddr}, {"b", nil}, {"c", ErrTunnelsTotal}} {
		if err := open.take(step.addr, c); err != step.want {
			t.Fatalf("take %s: %v, want %v", step.addr, err, step.want)
		}
	}
	open.release("a")
	if err := open.take("a", c); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	open.closeAll()
	if err := open.take("d", c); err != errTunnelsShutdown {
		t.Fatalf("after Close: %v", err)
	}
}
