package systemtest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"waitingroom/server/pass"
	"waitingroom/server/pass/passcheck"
)

// Origin is a small site behind the gateway: it echoes what it received,
// and verifies the pass header with passcheck like a real origin would.
type Origin struct {
	Server   *httptest.Server
	Check    *passcheck.Checker
	Requests atomic.Int64
	Last     atomic.Pointer[http.Request]
}

func StartOrigin(t *testing.T) *Origin {
	t.Helper()
	o := &Origin{}
	o.Server = httptest.NewServer(http.HandlerFunc(o.Serve))
	t.Cleanup(o.Server.Close)
	return o
}

func (o *Origin) Serve(w http.ResponseWriter, r *http.Request) {
	o.Requests.Add(1)
	if r.URL.Path == "/ws/echo" || r.URL.Path == "/checkout/ws" {
		echoWebSocket(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	o.Last.Store(r.Clone(context.Background()))
	switch r.URL.Path {
	case "/checkout/fail":
		w.WriteHeader(http.StatusInternalServerError)
	case "/checkout/slow":
		time.Sleep(3 * time.Second)
	case "/big":
		_, _ = w.Write([]byte(strings.Repeat("x", 200<<10)))
		return
	case "/huge-headers":
		w.Header().Set("X-Huge", strings.Repeat("h", 100<<10))
		return
	case "/checkout/reset", "/checkout/malformed":
		// Mid-response: a promised body cut short, or no HTTP at all.
		conn, buf, _ := w.(http.Hijacker).Hijack()
		if r.URL.Path == "/checkout/reset" {
			_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npartial")
		} else {
			_, _ = buf.WriteString("NOT HTTP AT ALL\r\n\r\n")
		}
		_ = buf.Flush()
		conn.Close()
		return
	}
	room, subject, jti := "", "", ""
	if raw := r.Header.Get(passcheck.HeaderName); raw != "" && o.Check != nil {
		c, err := o.Check.Verify(raw)
		if err != nil {
			http.Error(w, "bad pass: "+err.Error(), http.StatusForbidden)
			return
		}
		room, subject, jti = c.Room, c.Subject+"/"+c.Mode, c.PassID
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"method": r.Method, "uri": r.URL.RequestURI(), "len": len(body),
		"room": room, "subject": subject, "jti": jti, "xff": r.Header.Get("X-Forwarded-For"), "cookie": r.Header.Get("Cookie"),
		"foo": r.Header.Get("X-Foo"), "encoding": r.Header.Get("Content-Encoding"), "fwd": r.Header.Get("Forwarded")})
}

// GatewayInstance starts an instance in front of o protecting /checkout/*
// for room "sale" (admissions every 20 ms).
func GatewayInstance(t *testing.T, o *Origin, vars map[string]string) *Instance {
	t.Helper()
	e := NewEnv(t)
	v := map[string]string{"WR_UPSTREAM": o.Server.URL, "WR_PROTECT": "GET /checkout/*=sale, POST /checkout/*=sale",
		"WR_PASS_KEY": pass.GenerateKey(), "WR_ROOMS": "default,sale", "WR_ADMIT_INTERVAL": "20ms",
		"WR_UPSTREAM_TIMEOUT": "1s", "WR_UPSTREAM_BODY_LIMIT": "65536"}
	for k, val := range vars {
		v[k] = val
	}
	in := e.Start(v)
	check, err := passcheck.New(passcheck.Options{JWKSURL: in.Base + "/_wr/.well-known/jwks.json", Rooms: []string{"sale", "vip"}})
	if err != nil {
		t.Fatal(err)
	}
	o.Check = check
	return in
}

// Visitor is a browser-like client: a cookie jar, no redirects followed.
func Visitor(t testing.TB) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func Call(t testing.TB, c *http.Client, method, url, body string, headers ...string) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return res.StatusCode, res.Header, m
}

// SetGateway changes a room's gateway settings through the admin API; every
// instance reloads them within a second (this one at once).
func SetGateway(t *testing.T, in *Instance, room string, settings map[string]any) Response {
	t.Helper()
	r := Do(t, "PUT", in.Admin+"/admin/rooms/"+room, TestAdminToken, map[string]any{"gateway": settings})
	if r.Status != 200 {
		t.Fatalf("PUT gateway settings %v: %d %s", settings, r.Status, r.Raw)
	}
	return r
}

// echoWebSocket answers a WebSocket with the pass it was given, then
// echoes every message.
func echoWebSocket(w http.ResponseWriter, r *http.Request) {
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer conn.Close()
	_ = conn.WriteMessage(websocket.TextMessage, []byte("pass="+strconv.FormatBool(r.Header.Get(passcheck.HeaderName) != "")))
	for {
		kind, msg, err := conn.ReadMessage()
		if err != nil {
			return
		}
		_ = conn.WriteMessage(kind, msg)
	}
}
