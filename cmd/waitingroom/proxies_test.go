package main

// The shipped forward-auth configurations (deploy/forward-auth), run for
// real: nginx and Caddy in front of the Express origin
// (testdata/express-origin), each asking an instance in forward auth
// (WR_FORWARD_AUTH=on) about every request. Every test runs against both
// proxies, as subtests sharing one instance and one origin; what the
// origin got is read from its log. Visitors connect from 127.0.0.2, and
// only 127.0.0.1 (where the proxies connect from) is a trusted proxy, so
// that a visitor asking the instance itself is not one.

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"waitingroom/internal/freeport"
	"waitingroom/server/gateway"
	"waitingroom/server/pass"
	"waitingroom/server/pass/passcheck"
)

// visitorIP is where the tests' visitors connect from: loopback, but not
// the trusted proxies' address.
const visitorIP = "127.0.0.2"

// frontProxy is one shipped configuration and how its server runs it.
type frontProxy struct {
	name     string // the binary, and the subtest's name
	template string // under deploy/forward-auth
	conf     string // the rendered file's name in the prefix folder
	args     func(dir string) []string
}

var frontProxies = []frontProxy{
	{name: "nginx", template: "nginx.conf.template", conf: "nginx.conf", args: func(dir string) []string {
		return []string{"-p", dir, "-c", "nginx.conf", "-g", "daemon off;"}
	}},
	{name: "caddy", template: "Caddyfile.template", conf: "Caddyfile", args: func(dir string) []string {
		return []string{"run", "--config", filepath.Join(dir, "Caddyfile"), "--adapter", "caddyfile"}
	}},
}

// proxyBinary is the path of p's server: on PATH, or where Debian puts it
// (nginx is in /usr/sbin, off a normal user's PATH).
func proxyBinary(t *testing.T, p frontProxy) string {
	t.Helper()
	bin, err := exec.LookPath(p.name)
	if err == nil {
		return bin
	}
	for _, dir := range []string{"/usr/sbin", "/usr/bin"} {
		if _, serr := os.Stat(filepath.Join(dir, p.name)); serr == nil {
			return filepath.Join(dir, p.name)
		}
	}
	t.Fatalf("the forward-auth proxy tests need %s (%v): run `make test`, which installs it, or `apt-get install %s`", p.name, err, p.name)
	return ""
}

// renderTemplate is envsubst '${LISTEN_ADDR} ${WAITINGROOM_ADDR}
// ${ORIGIN_ADDR}' of a template: those three variables and nothing else.
func renderTemplate(t *testing.T, name, listen, waitingroom, origin string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "forward-auth", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer("${LISTEN_ADDR}", listen, "${WAITINGROOM_ADDR}", waitingroom, "${ORIGIN_ADDR}", origin).Replace(string(raw))
}

// prefixDir is a fresh folder for a proxy's files, removed at the end. It
// is searchable by everyone: nginx run as root has its workers run as
// nobody, and they write the temporary files under it.
func prefixDir(t *testing.T, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "wr-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// freeAddr is a loopback address for a proxy a test starts
// (freeport.BelowEphemeral: Caddy binds every interface).
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := freeport.BelowEphemeral()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// startProxy runs p in front of origin asking waitingroom (host:port
// each) and returns its base URL once it accepts connections. It stops
// when the test ends; if the test failed, its output and logs are shown.
func startProxy(t *testing.T, p frontProxy, waitingroom, origin string) string {
	t.Helper()
	bin := proxyBinary(t, p)
	// The port is free when chosen, not when the proxy binds it: another
	// process may take it meanwhile, then the proxy is started again.
	for attempt := 1; ; attempt++ {
		listen := freeAddr(t)
		dir := prefixDir(t, p.name)
		conf := renderTemplate(t, p.template, listen, waitingroom, origin)
		if err := os.WriteFile(filepath.Join(dir, p.conf), []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := runProxy(t, p, bin, dir, listen)
		if err == nil {
			return "http://" + listen
		}
		if attempt < 3 && strings.Contains(out, "in use") {
			continue
		}
		t.Fatalf("%s did not start: %v\n%s", p.name, err, out)
	}
}

// runProxy starts bin on the configuration in dir and waits until it
// accepts connections on listen, or exits (its output is then returned
// with the error).
func runProxy(t *testing.T, p frontProxy, bin, dir, listen string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, p.args(dir)...)
	cmd.Dir = dir
	// Caddy keeps its state in the user's folders: HOME puts them in dir.
	cmd.Env = append(withoutEnv(os.Environ(), "HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"), "HOME="+dir)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	// A group of its own: if it must be killed, its workers (nginx's)
	// go with it, and with them the pipe Wait reads to its end.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	endWithTest(cmd)
	started, exited := make(chan error, 1), make(chan error, 1)
	go func() {
		// The thread that starts cmd stays with it until it exits
		// (endWithTest).
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return "", err
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM) // both: a fast shutdown
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("%s's output:\n%s", p.name, out)
			for _, f := range []string{"error.log", "access.log"} {
				if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil && len(b) > 0 {
					t.Logf("%s's %s:\n%s", p.name, f, b)
				}
			}
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", listen, time.Second); err == nil {
			c.Close()
			return "", nil
		}
		select {
		case err := <-exited:
			stopped = true
			if err == nil {
				err = errors.New("exited")
			}
			return out.String(), err
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return out.String(), errors.New("not listening after 20 s")
		}
	}
}

// withoutEnv is env without the variables named.
func withoutEnv(env []string, names ...string) []string {
	var out []string
next:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
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
	proxy  string       // "nginx" or "caddy"
	in     *instance    // the waiting room (in.base: its own port)
	base   string       // the proxy, where visitors go
	log    func() []hit // what the origin got since the subtest began
	passes *passcheck.Checker
}

// eachProxy runs f once per shipped proxy, as subtests, in front of the
// origin at originBase (its log read by hits) and beside one instance in
// forward auth.
func eachProxy(t *testing.T, in *instance, originBase string, hits func() []hit, f func(t *testing.T, s *proxiedSite)) {
	t.Helper()
	passes, err := passcheck.New(passcheck.Options{JWKSURL: in.base + "/_wr/.well-known/jwks.json", Rooms: []string{"sale"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range frontProxies {
		t.Run(p.name, func(t *testing.T) {
			base := startProxy(t, p, strings.TrimPrefix(in.base, "http://"), strings.TrimPrefix(originBase, "http://"))
			before := len(hits())
			f(t, &proxiedSite{t: t, proxy: p.name, in: in, base: base, passes: passes,
				log: func() []hit { return hits()[before:] }})
		})
	}
}

// forwardAuthSites starts the Express origin and an instance in forward
// auth (on Redis alone) and runs f for each proxy in front of them.
func forwardAuthSites(t *testing.T, f func(t *testing.T, s *proxiedSite)) {
	t.Helper()
	originBase, hits := startExpress(t)
	in := newRedisOnlyEnv(t).start(forwardAuthVars())
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
	s.in.admit("sale")
	waitFor(s.t, "READY through the proxy", func() bool {
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
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, NetDialContext: dialerFrom(visitorIP).DialContext}
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
