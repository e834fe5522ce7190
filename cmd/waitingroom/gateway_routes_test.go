package main

// End-to-end tests of protected-route matching: every spelling of a
// protected route that an origin would route to its protected handler is
// judged protected by the gateway. The origins are a real Express 4 app
// (testdata/express-origin, run with node) and a Go origin that routes as
// leniently as the mainstream frameworks do together.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"waitingroom/server/pass"
	"waitingroom/server/pass/passcheck"
)

// readmeProtect is the README's example of WR_PROTECT.
const readmeProtect = "POST /api/orders=sale, GET /checkout/*=sale"

// routeVariant is one request for the gateway: a method and a
// request-target sent byte for byte, and the status the gateway must answer
// without a pass: 403 pass_required, or 400 invalid_request when the path
// is ambiguous.
type routeVariant struct {
	method, target string
	want           int
}

// protectedVariants spell the README's two routes the ways origins route
// them: case, trailing and repeated slashes, percent-encoding, dot
// segments, ;params, format suffixes, backslashes, absolute form.
func protectedVariants(host string) []routeVariant {
	v := []routeVariant{}
	for _, p := range []string{
		"/api/orders", "/api/orders/", "/API/orders", "/Api/Orders", "/api/ORDERS/", "/api/orders%2F",
		"/api//orders//", "//api/orders", "/api/orders;jsessionid=1", "/api;x=1/orders", "/api/orders%3Bx",
		"/api/orders.json", "/api/orders.JSON/", "/api/./orders", "/api/x/../orders", "/api/x/..;/orders",
		"/api/orders/.", "/api%2Forders", "/api/%6Frders", "/api/%6frders", "/api\\orders", "/api%5Corders",
		"/api/orders%2e", "/api/x/%2e%2e/orders", "/api/orders?x=1", "/api/orders#top", "/api/orders.",
		"/api/orders%20", "http://" + host + "/API/orders",
	} {
		v = append(v, routeVariant{"POST", p, 403})
	}
	for _, p := range []string{
		"/checkout/pay", "/Checkout/pay", "/CHECKOUT/PAY", "/checkout", "/checkout/", "/checkout.json",
		"//checkout//pay", "/checkout%2Fpay", "/x/../checkout/pay", "/checkout;a=b/pay", "/checkout\\pay",
		"/%63heckout/pay",
	} {
		v = append(v, routeVariant{"GET", p, 403}, routeVariant{"HEAD", p, 403})
	}
	// Ambiguous paths: refused whatever the route.
	for _, p := range []string{"/api/orders%00", "/api/orders%zz", "/api/orders%4", "/api/%C0%AForders",
		"/api/%E0%80%AForders", "/api/orders%E9", "/api/orders%0d%0a", "/api/%ED%A0%80orders"} {
		v = append(v, routeVariant{"POST", p, 400})
	}
	// A lowercase method is no method at all (the public port's filter).
	return append(v, routeVariant{"post", "/api/orders", 400})
}

// unprotectedVariants are near misses that must still reach the origin.
var unprotectedVariants = []routeVariant{
	{"GET", "/api/orders-list", 200}, {"GET", "/API/Orders-List/", 200}, {"GET", "/api/orders", 404},
	{"POST", "/api/ordersx", 404}, {"POST", "/api/orders/1", 404}, {"GET", "/checkoutx", 404},
	{"POST", "/checkout/pay", 404}, {"GET", "/api/orders.json", 404},
}

// rawCall sends one request over a new connection, its request-target
// exactly as given, and returns the answer's status and body.
func rawCall(t *testing.T, base, method, target string, headers ...string) (int, string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	req := method + " " + target + " HTTP/1.1\r\nHost: " + strings.TrimPrefix(base, "http://") +
		"\r\nContent-Length: 0\r\nConnection: close\r\n"
	for i := 0; i+1 < len(headers); i += 2 {
		req += headers[i] + ": " + headers[i+1] + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// hit is one request an origin got.
type hit struct {
	Method  string `json:"method"`
	URL     string `json:"url"`
	Pass    bool   `json:"pass"`
	Handler string `json:"handler"` // the handler that answered, "" for none
	// The Express origin's only: the Waitingroom-Pass it got, and every
	// header a client could forge to pass or reroute ("name: value", the
	// name as sent; the pass among them).
	PassValue string   `json:"passValue"`
	Suspect   []string `json:"suspect"`
}

// startExpress runs testdata/express-origin under node and returns its
// address and a reader of its log. The test owns the process: it ends
// when its stdin closes, at the test's end.
func startExpress(t *testing.T) (base string, hits func() []hit) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no extra processes")
	}
	dir, _ := filepath.Abs(filepath.Join("testdata", "express-origin"))
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("the Express origin needs Node.js (%v): apt-get install nodejs npm", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "express")); err != nil {
		t.Fatalf("the Express origin is not installed (%v): run `npm ci --prefix %s` (make test does)", err, dir)
	}
	cmd := exec.Command(node, "server.js")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The reader ends at the process's exit; Wait only after it (os/exec:
	// no Wait before the pipe's reads are done).
	lines, read := make(chan string, 1), make(chan struct{})
	go func() {
		defer close(read)
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, stdout)
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-read:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-read
		}
		_ = cmd.Wait()
	})
	var ready struct{ Port int }
	select {
	case line := <-lines:
		if err := json.Unmarshal([]byte(line), &ready); err != nil || ready.Port == 0 {
			t.Fatalf("the Express origin did not start: %q", line)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the Express origin did not start within 30 s")
	}
	base = fmt.Sprintf("http://127.0.0.1:%d", ready.Port)
	return base, func() []hit {
		t.Helper()
		res, err := client.Get(base + "/__log")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var hs []hit
		if err := json.NewDecoder(res.Body).Decode(&hs); err != nil {
			t.Fatal(err)
		}
		return hs
	}
}

// lenientOrigin routes as leniently as mainstream frameworks do together,
// each rule from one of them: case-insensitive (ASP.NET, Express), a
// backslash is a slash (IIS), ;params dropped from every segment (Tomcat,
// Spring, Jetty), the path cleaned (Go's ServeMux, Tomcat), a trailing
// slash optional (Express, Rails, Django's APPEND_SLASH), a format suffix
// optional (Rails' (.:format), Spring's suffix patterns), trailing dots
// and spaces dropped (Windows paths under IIS).
type lenientOrigin struct {
	srv  *httptest.Server
	mu   sync.Mutex
	hits []hit
}

func startLenientOrigin(t *testing.T) *lenientOrigin {
	t.Helper()
	o := &lenientOrigin{}
	o.srv = httptest.NewServer(http.HandlerFunc(o.serve))
	t.Cleanup(o.srv.Close)
	return o
}

func (o *lenientOrigin) serve(w http.ResponseWriter, r *http.Request) {
	p := strings.ToLower(strings.ReplaceAll(r.URL.Path, `\`, "/"))
	segs := strings.Split(p, "/")
	for i, s := range segs {
		s, _, _ = strings.Cut(s, ";")
		if s = strings.TrimRight(s, " "); s != ".." {
			s = strings.TrimRight(s, ".")
		}
		segs[i] = s
	}
	p = path.Clean("/" + strings.Join(segs, "/"))
	if i := strings.LastIndexByte(p, '/'); strings.Contains(p[i:], ".") {
		p = p[:i+strings.IndexByte(p[i:], '.')]
	}
	h := hit{Method: r.Method, URL: r.URL.RequestURI(), Pass: r.Header.Get(passcheck.HeaderName) != ""}
	// A POST is routed as the method its query's or its form's _method
	// names, as Rails, Laravel, Symfony and Express's method-override do.
	method := r.Method
	if method == "POST" {
		if m := r.URL.Query().Get("_method"); m != "" {
			method = strings.ToUpper(m)
		} else if r.ParseForm() == nil && r.PostForm.Get("_method") != "" {
			method = strings.ToUpper(r.PostForm.Get("_method"))
		}
	}
	switch {
	case method == "POST" && p == "/api/orders":
		h.Handler = "orders"
	case (method == "GET" || method == "HEAD") && (p == "/checkout" || strings.HasPrefix(p, "/checkout/")):
		h.Handler = "checkout"
	case method == "GET" && p == "/api/orders-list":
		h.Handler = "list"
	}
	o.mu.Lock()
	o.hits = append(o.hits, h)
	o.mu.Unlock()
	if h.Handler == "" {
		http.NotFound(w, r)
		return
	}
	if h.Handler == "orders" {
		w.WriteHeader(http.StatusCreated)
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"handler": h.Handler, "pass": h.Pass})
}

func (o *lenientOrigin) log() []hit {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]hit(nil), o.hits...)
}

// frontOf starts an instance in gateway mode in front of the origin at
// upstream, protecting the README's routes for room "sale".
func frontOf(t *testing.T, upstream string) *instance {
	t.Helper()
	return newEnv(t).start(map[string]string{"WR_UPSTREAM": upstream, "WR_PROTECT": readmeProtect,
		"WR_PASS_KEY": pass.GenerateKey(), "WR_ROOMS": "default,sale", "WR_ADMIT_INTERVAL": "20ms",
		"WR_UPSTREAM_TIMEOUT": "5s"})
}

// checkRouteVariants sends every variant through in and fails for each
// one the gateway answered otherwise than it must, and for each request
// that reached a protected handler of the origin without a pass.
func checkRouteVariants(t *testing.T, in *instance, hits func() []hit) {
	t.Helper()
	host := strings.TrimPrefix(in.base, "http://")
	for _, v := range append(protectedVariants(host), unprotectedVariants...) {
		code, body := rawCall(t, in.base, v.method, v.target)
		if code != v.want {
			t.Errorf("%s %s: %d %s, want %d", v.method, v.target, code, strings.TrimSpace(body), v.want)
		}
		if code == 400 && !strings.Contains(body, `"error":"invalid_request"`) && v.method != "HEAD" {
			t.Errorf("%s %s: 400 %s, want the contract's invalid_request", v.method, v.target, body)
		}
	}
	// An admitted visitor gets through on a variant, with a pass: the
	// variant does reach the protected handler.
	c := visitor(t)
	admitted(t, in, c, "sale")
	if code, _, m := call(t, c, "POST", in.base+"/Api/Orders/", ""); code != 201 || m["handler"] != "orders" || m["pass"] != true {
		t.Errorf("an admitted POST /Api/Orders/: %d %v, want 201 from the orders handler with a pass", code, m)
	}
	var unprotected int
	for _, h := range hits() {
		if h.Handler != "" && h.Handler != "list" && !h.Pass {
			t.Errorf("%s %s reached the origin's %s handler without a pass", h.Method, h.URL, h.Handler)
		}
		if h.Handler == "list" {
			unprotected++
		}
	}
	if unprotected != 2 {
		t.Errorf("the unprotected handler was reached %d times, want 2", unprotected)
	}
}

// TestGatewayRouteVariantsExpress: in front of a real Express 4 app with
// Express's default routing, no spelling of a protected route reaches its
// handler without a pass, and near misses still reach the origin.
func TestGatewayRouteVariantsExpress(t *testing.T) {
	base, hits := startExpress(t)
	checkRouteVariants(t, frontOf(t, base), hits)
}

// TestGatewayRouteVariantsLenientOrigin: the same in front of an origin
// that routes with every mainstream framework's leniency at once.
func TestGatewayRouteVariantsLenientOrigin(t *testing.T) {
	o := startLenientOrigin(t)
	checkRouteVariants(t, frontOf(t, o.srv.URL), o.log)
}

// TestGatewayForwardsThePathAsBefore: route matching decides, it does not
// rewrite: the origin receives the path fasthttp normalized, not the
// gateway's canonical form.
func TestGatewayForwardsThePathAsBefore(t *testing.T) {
	o := startLenientOrigin(t)
	in := frontOf(t, o.srv.URL)
	for target, want := range map[string]string{
		"/Some//Path/./x;y=1.JSON/?q=A%20B": "/Some/Path/x;y=1.JSON/?q=A%20B",
		"/a%2Fb%5Cc":                        "/a/b%5Cc",
	} {
		rawCall(t, in.base, "GET", target)
		hs := o.log()
		if got := hs[len(hs)-1].URL; got != want {
			t.Errorf("GET %s reached the origin as %s, want %s", target, got, want)
		}
	}
}

// TestGatewayMethodOverride: a POST that the origin routes as GET (a
// form's or a query's _method) to a GET-protected path needs a pass; a
// JSON POST to the same path, which no framework reroutes, does not.
func TestGatewayMethodOverride(t *testing.T) {
	o := startLenientOrigin(t)
	in := frontOf(t, o.srv.URL)
	c := visitor(t)
	for _, r := range []struct{ target, contentType, body string }{
		{"/checkout/pay", "application/x-www-form-urlencoded", "_method=GET"},
		{"/checkout/pay", "multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data; name=\"_method\"\r\n\r\nGET\r\n--b--\r\n"},
		{"/checkout/pay?_method=GET", "application/json", "{}"},
		{"/Checkout/Pay/?_method=get", "text/plain", ""},
	} {
		res, err := c.Post(in.base+r.target, r.contentType, strings.NewReader(r.body))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 403 || !strings.Contains(string(body), "pass_required") {
			t.Errorf("POST %s (%s): %d %s, want 403 pass_required", r.target, r.contentType, res.StatusCode, body)
		}
	}
	res, err := c.Post(in.base+"/checkout/pay", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 404 {
		t.Errorf("a JSON POST /checkout/pay: %d, want the origin's 404 (not protected, no handler)", res.StatusCode)
	}
	for _, h := range o.log() {
		if h.Handler != "" && !h.Pass {
			t.Errorf("%s %s reached the origin's %s handler without a pass", h.Method, h.URL, h.Handler)
		}
	}
}
