package gateway

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/gateway"
)

// TestProxiesHeadRequests: HEAD is judged as GET (frameworks answer it
// with the GET handler). The question about a HEAD request comes as GET
// (Caddy's, Traefik's), so its answer is a GET's: a refusal carries the
// body its Content-Length announces, else the proxy waits for it on the
// connection. Through each proxy HEAD /public reaches the origin without
// a pass; HEAD /checkout/x without one is refused (403, no body) and the
// next requests are answered; with a visit it reaches the origin with a
// pass.
func TestProxiesHeadRequests(t *testing.T) {
	originBase, hits := startExpress(t)
	in := systemtest.NewRedisOnlyEnv(t).Start(forwardAuthVars())
	// The question asked directly, as a proxy does, on a kept-alive
	// connection from 127.0.0.1 (trusted).
	conn, err := net.Dial("tcp", strings.TrimPrefix(in.Base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "GET "+gateway.AuthPath+" HTTP/1.1\r\nHost: shop.example\r\n"+
		"X-Forwarded-Method: HEAD\r\nX-Forwarded-Uri: /checkout/x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: "GET"})
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 403 || int64(len(body)) != res.ContentLength {
		t.Errorf("GET %s about HEAD /checkout/x: %d, Content-Length %d, %d bytes of body (%v); want 403 with the body it announces",
			gateway.AuthPath, res.StatusCode, res.ContentLength, len(body), err)
	}
	eachProxy(t, in, originBase, hits, func(t *testing.T, s *proxiedSite) {
		c := s.visitor()
		if res, _ := s.send(c, "HEAD", "/public", ""); res.StatusCode != 200 {
			t.Fatalf("%s: HEAD /public: %d", s.proxy, res.StatusCode)
		}
		if h := s.lastHit(); h.Method != "HEAD" || h.Pass {
			t.Errorf("%s: the origin got %+v, want HEAD /public without a pass", s.proxy, h)
		}
		for i := 0; i < 2; i++ {
			if res, body := s.send(c, "HEAD", "/checkout/x", ""); res.StatusCode != 403 || body != "" {
				t.Fatalf("%s: HEAD /checkout/x without a pass: %d %q, want 403 without a body", s.proxy, res.StatusCode, body)
			}
		}
		if res, _ := s.send(c, "GET", "/checkout/x", "", "Accept", "application/json"); res.StatusCode != 403 {
			t.Fatalf("%s: GET /checkout/x after them: %d, want 403", s.proxy, res.StatusCode)
		}
		s.admit(c)
		if res, _ := s.send(c, "GET", "/checkout/x", ""); res.StatusCode != 200 { // opens the visit
			t.Fatalf("%s: GET /checkout/x admitted: %d", s.proxy, res.StatusCode)
		}
		if res, _ := s.send(c, "HEAD", "/checkout/x", ""); res.StatusCode != 200 {
			t.Fatalf("%s: HEAD /checkout/x in the visit: %d", s.proxy, res.StatusCode)
		}
		if h := s.lastHit(); h.Method != "HEAD" || h.Handler != "checkout" {
			t.Errorf("%s: the origin got %+v, want HEAD /checkout/x", s.proxy, h)
		} else {
			s.verify(h)
		}
		noProtectedWithoutPass(t, s.proxy, s.log())
	})
}
