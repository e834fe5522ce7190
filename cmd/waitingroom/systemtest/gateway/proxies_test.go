package gateway

// The shipped forward-auth configurations (deploy/forward-auth), run for
// real: nginx and Caddy in front of the Express origin
// (testdata/express-origin), each asking an instance in forward auth
// (WR_FORWARD_AUTH=on) about every request. Every test runs against both
// proxies, as subtests sharing one instance and one origin; what the
// origin got is read from its log. Visitors connect from 127.0.0.2, and
// only 127.0.0.1 (where the proxies connect from) is a trusted proxy, so
// that a visitor asking the instance itself is not one.

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/gateway"
	"waitingroom/server/pass"
	"waitingroom/server/pass/passcheck"
)

// visitorIP is where the tests' visitors connect from: loopback, but not
// the trusted proxies' address.
const visitorIP = "127.0.0.2"

// renderTemplate is envsubst '${LISTEN_ADDR} ${WAITINGROOM_ADDR}
// ${ORIGIN_ADDR}' of a template: those three variables and nothing else.
func renderTemplate(t *testing.T, name, listen, waitingroom, origin string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "deploy", "forward-auth", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer("${LISTEN_ADDR}", listen, "${WAITINGROOM_ADDR}", waitingroom, "${ORIGIN_ADDR}", origin).Replace(string(raw))
}

// startProxy runs p in front of origin asking waitingroom (host:port
// each) and returns its base URL once it accepts connections. It stops
// when the test ends; if the test failed, its output and logs are shown.
func startProxy(t *testing.T, p systemtest.FrontProxy, waitingroom, origin string) string {
	t.Helper()
	bin := systemtest.ProxyBinary(t, p)
	// The port is free when chosen, not when the proxy binds it: another
	// process may take it meanwhile, then the proxy is started again.
	for attempt := 1; ; attempt++ {
		listen := systemtest.FreePort(t)
		dir := systemtest.PrefixDir(t, p.Name)
		conf := renderTemplate(t, p.Template, listen, waitingroom, origin)
		if err := os.WriteFile(filepath.Join(dir, p.Conf), []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := systemtest.RunProxy(t, p, bin, dir, listen)
		if err == nil {
			return "http://" + listen
		}
		if attempt < 3 && strings.Contains(out, "in use") {
			continue
		}
		t.Fatalf("%s did not start: %v\n%s", p.Name, err, out)
	}
}

// forwardAuthVars configure an instance in forward auth for the README's
// routes (readmeProtect, room sale), trusting 127.0.0.1 alone.
func forwardAuthVars() map[string]string {
	return map[string]string{"WR_FORWARD_AUTH": "on", "WR_PROTECT": readmeProtect, "WR_ROOMS": "sale",
		"WR_PASS_KEY": pass.GenerateKey(), "WR_TRUSTED_PROXIES": "127.0.0.1"}
}

// proxiedSite is a proxy in front of an origin, with the waiting room
// beside it.
type proxiedSite struct {
	t      *testing.T
	proxy  string               // "nginx" or "caddy"
	in     *systemtest.Instance // the waiting room (in.base: its own port)
	base   string               // the proxy, where visitors go
	log    func() []hit         // what the origin got since the subtest began
	passes *passcheck.Checker
}

// eachProxy runs f once per shipped proxy, as subtests, in front of the
// origin at originBase (its log read by hits) and beside one instance in
// forward auth.
func eachProxy(t *testing.T, in *systemtest.Instance, originBase string, hits func() []hit, f func(t *testing.T, s *proxiedSite)) {
	t.Helper()
	passes, err := passcheck.New(passcheck.Options{JWKSURL: in.Base + "/_wr/.well-known/jwks.json", Rooms: []string{"sale"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range systemtest.FrontProxies {
		t.Run(p.Name, func(t *testing.T) {
			base := startProxy(t, p, strings.TrimPrefix(in.Base, "http://"), strings.TrimPrefix(originBase, "http://"))
			before := len(hits())
			f(t, &proxiedSite{t: t, proxy: p.Name, in: in, base: base, passes: passes,
				log: func() []hit { return hits()[before:] }})
		})
	}
}

// forwardAuthSites starts the Express origin and an instance in forward
// auth (on Redis alone) and runs f for each proxy in front of them.
func forwardAuthSites(t *testing.T, f func(t *testing.T, s *proxiedSite)) {
	t.Helper()
	originBase, hits := startExpress(t)
	in := systemtest.NewRedisOnlyEnv(t).Start(forwardAuthVars())
	eachProxy(t, in, originBase, hits, f)
}

// visitor is a browser-like client of the site (a cookie jar, redirects
// not followed), connecting from visitorIP.
func (s *proxiedSite) visitor() *http.Client {
	return visitorFrom(s.t, s.base, visitorIP, nil)
}

// send sends method path to the site with headers (name, value pairs;
// each name sent as it is written, not canonicalized) and returns the
// answer with its body.
func (s *proxiedSite) send(c *http.Client, method, path, body string, headers ...string) (*http.Response, string) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header[headers[i]] = append(req.Header[headers[i]], headers[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		s.t.Fatalf("%s: %s %s: %v", s.proxy, method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// admit queues c in room sale through the proxy, admits it and polls
// until READY: c then holds the entry cookie, as the waiting page leaves
// it.
func (s *proxiedSite) admit(c *http.Client) {
	s.t.Helper()
	if res, body := s.send(c, "POST", "/_wr/api/v1/rooms/sale/enter", ""); res.StatusCode != 200 {
		s.t.Fatalf("%s: anonymous enter through the proxy: %d %s", s.proxy, res.StatusCode, body)
	}
	s.in.Admit("sale")
	systemtest.WaitFor(s.t, "READY through the proxy", func() bool {
		_, body := s.send(c, "GET", "/_wr/api/v1/rooms/sale/position", "")
		return strings.Contains(body, `"status":"READY"`)
	})
	if cookieOf(c, s.base, gateway.EntryCookie("sale")) == "" {
		s.t.Fatalf("%s: READY left no %s cookie", s.proxy, gateway.EntryCookie("sale"))
	}
}

// lastHit is the origin's last request, failing the test when it got none.
func (s *proxiedSite) lastHit() hit {
	s.t.Helper()
	hs := s.log()
	if len(hs) == 0 {
		s.t.Fatalf("%s: the origin got nothing", s.proxy)
	}
	return hs[len(hs)-1]
}

// verify checks a pass the origin got against the waiting room's keys,
// failing the test when it does not verify.
func (s *proxiedSite) verify(h hit) *passcheck.Claims {
	s.t.Helper()
	if !h.Pass || h.PassValue == "" {
		s.t.Fatalf("%s: %s %s reached the origin without a pass", s.proxy, h.Method, h.URL)
	}
	c, err := s.passes.Verify(h.PassValue)
	if err != nil {
		s.t.Fatalf("%s: the pass of %s %s: %v", s.proxy, h.Method, h.URL, err)
	}
	return c
}

// noProtectedWithoutPass fails for every request that reached a
// protected handler of the origin without a pass.
func noProtectedWithoutPass(t *testing.T, who string, hits []hit) {
	t.Helper()
	for _, h := range hits {
		if protectedHandler(h.Handler) && !h.Pass {
			t.Errorf("%s: %s %s reached the origin's %s handler without a pass", who, h.Method, h.URL, h.Handler)
		}
	}
}

// protectedHandler reports whether the origins' handler name serves a
// route of readmeProtect.
func protectedHandler(name string) bool {
	switch name {
	case "", "list", "public", "public-ws":
		return false
	}
	return true
}

// dialWSVia opens a WebSocket to path on the site as c (its cookies),
// from visitorIP; status is the handshake's answer (101 when it opened).
func (s *proxiedSite) dialWSVia(c *http.Client, path string) (conn *websocket.Conn, status int) {
	s.t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, NetDialContext: systemtest.DialerFrom(visitorIP).DialContext}
	if c != nil {
		d.Jar = c.Jar
	}
	conn, res, err := d.Dial("ws"+strings.TrimPrefix(s.base, "http")+path, nil)
	if err != nil {
		if res != nil {
			return nil, res.StatusCode
		}
		s.t.Fatalf("%s: WebSocket %s: %v", s.proxy, path, err)
	}
	s.t.Cleanup(func() { conn.Close() })
	return conn, 101
}

// returnOf is the return URL of a waiting page's URL (/_wr/rooms/sale?return=…).
func returnOf(t *testing.T, pageURL string) string {
	t.Helper()
	u, err := url.Parse(pageURL)
	if err != nil || u.Path != "/_wr/rooms/sale" {
		t.Fatalf("%q is not room sale's waiting page", pageURL)
	}
	return u.Query().Get("return")
}
