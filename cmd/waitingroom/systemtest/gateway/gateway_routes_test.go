package gateway

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
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/pass"
	"waitingroom/server/pass/passcheck"
)

// readmeProtect is the README's example of WR_PROTECT.
const readmeProtect = "POST /api/orders=sale, GET /checkout/*=sale"

// routeVariant is one request for the gateway: a method and a
// request-target sent byte for byte, and the status the gateway must answer
// without a pass: 403 pass_required, or 400 with code (ambiguous_request:
// its readings disagree or it holds a dot segment; invalid_request: no
// origin reads it one way).
type routeVariant struct {
	method, target string
	want           int
	code           string
}

// protectedVariants spell the README's two routes the ways origins route
// them: case, trailing and repeated slashes, ;params, format suffixes,
// absolute form (protected); percent-encoding of what a browser leaves as
// it is, "\", dot segments (ambiguous: origins read them apart).
func protectedVariants(host string) []routeVariant {
	v := []routeVariant{}
	for _, p := range []string{
		"/api/orders", "/api/orders/", "/API/orders", "/Api/Orders", "/api/ORDERS/",
		"/api//orders//", "//api/orders", "/api/orders;jsessionid=1",
		"/api/orders.json", "/api/orders.JSON/", "/api/orders?x=1", "/api/orders#top", "/api/orders.",
		"http://" + host + "/API/orders",
	} {
		v = append(v, routeVariant{"POST", p, 403, ""})
	}
	for _, p := range []string{
		"/api/orders%2F", "/api/orders%3Bx", "/api/./orders", "/api/x/../orders", "/api/x/..;/orders",
		"/api/orders/.", "/api%2Forders", "/api/%6Frders", "/api/%6frders", "/api\\orders", "/api%5Corders",
		"/api/orders%2e", "/api/x/%2e%2e/orders", "/api/orders%20", "/api/orders/%252e%252e", "/api;x=1/orders",
		"/api/orders;/x",
	} {
		v = append(v, routeVariant{"POST", p, 400, "ambiguous_request"})
	}
	for _, p := range []string{
		"/checkout/pay", "/Checkout/pay", "/CHECKOUT/PAY", "/checkout", "/checkout/", "/checkout.json",
		"//checkout//pay", "/checkout;a=b/pay", "/checkout/%2e%2ex",
	} {
		v = append(v, routeVariant{"GET", p, 403, ""}, routeVariant{"HEAD", p, 403, ""})
	}
	for _, p := range []string{
		"/checkout%2Fpay", "/x/../checkout/pay", "/checkout\\pay", "/%63heckout/pay", "/checkout/..",
		"/checkout/../", "/checkout%2f..", "/checkout/%2e%2e", "/checkout/%252e%252e",
		"/checkout/x%252f..%252f..%252fpublic", "/checkout%23x", "/checkout%3F/x",
	} {
		v = append(v, routeVariant{"GET", p, 400, "ambiguous_request"}, routeVariant{"HEAD", p, 400, ""})
	}
	// Paths no origin reads one way: refused whatever the route.
	for _, p := range []string{"/api/orders%00", "/api/orders%zz", "/api/orders%4", "/api/%C0%AForders",
		"/api/%E0%80%AForders", "/api/orders%E9", "/api/orders%0d%0a", "/api/%ED%A0%80orders"} {
		v = append(v, routeVariant{"POST", p, 400, "invalid_request"})
	}
	// A lowercase method is no method at all (the public port's filter).
	return append(v, routeVariant{"post", "/api/orders", 400, "invalid_request"})
}

// unprotectedVariants are near misses that must still reach the origin.
var unprotectedVariants = []routeVariant{
	{"GET", "/api/orders-list", 200, ""}, {"GET", "/API/Orders-List/", 200, ""}, {"GET", "/api/orders", 404, ""},
	{"POST", "/api/ordersx", 404, ""}, {"POST", "/api/orders/1", 404, ""}, {"GET", "/checkoutx", 404, ""},
	{"POST", "/checkout/pay", 404, ""}, {"GET", "/api/orders.json", 404, ""},
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
		res, err := systemtest.Client.Get(base + "/__log")
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
// and spaces dropped (Windows paths under IIS), the path decoded once more
// (a framework behind a proxy that decoded it already), a POST routed as
// the _method of its query or of any body Rack or Laravel reads one from.
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
	p := r.URL.Path
	if q, err := url.PathUnescape(p); err == nil {
		p = q
	}
	p = strings.ToLower(strings.ReplaceAll(p, `\`, "/"))
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
	// A POST is routed as the method its query's or its body's _method
	// names, as Rails, Laravel, Symfony and Express's method-override do:
	// Rack reads a form from a body with no media type, or with one it
	// splits at "," or ";"; Laravel reads JSON's.
	method := r.Method
	if method == "POST" {
		if m := r.URL.Query().Get("_method"); m != "" {
			method = strings.ToUpper(m)
		} else if m := bodyMethod(r); m != "" {
			method = strings.ToUpper(m)
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

// bodyMethod is the _method a POST's body names, read as Rack reads a
// form and Laravel a JSON body.
func bodyMethod(r *http.Request) string {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	media := r.Header.Get("Content-Type")
	if i := strings.IndexAny(media, ";,"); i >= 0 {
		media = media[:i]
	}
	media = strings.ToLower(strings.TrimSpace(media))
	switch {
	case media == "" || media == "application/x-www-form-urlencoded":
		if v, err := url.ParseQuery(string(body)); err == nil {
			return v.Get("_method")
		}
	case strings.HasPrefix(media, "multipart/form-data"):
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		if r.ParseMultipartForm(1<<16) == nil {
			return r.PostFormValue("_method")
		}
	case strings.Contains(media, "json"):
		var m struct {
			Method string `json:"_method"`
		}
		if json.Unmarshal(body, &m) == nil {
			return m.Method
		}
	}
	return ""
}

func (o *lenientOrigin) log() []hit {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]hit(nil), o.hits...)
}

// frontOf starts an instance in gateway mode in front of the origin at
// upstream, protecting the README's routes for room "sale".
func frontOf(t *testing.T, upstream string) *systemtest.Instance {
	t.Helper()
	return systemtest.NewEnv(t).Start(map[string]string{"WR_UPSTREAM": upstream, "WR_PROTECT": readmeProtect,
		"WR_PASS_KEY": pass.GenerateKey(), "WR_ROOMS": "default,sale", "WR_ADMIT_INTERVAL": "20ms",
		"WR_UPSTREAM_TIMEOUT": "5s"})
}

// checkRouteVariants sends every variant through in and fails for each
// one the gateway answered otherwise than it must, and for each request
// that reached a protected handler of the origin without a pass.
func checkRouteVariants(t *testing.T, in *systemtest.Instance, hits func() []hit) {
	t.Helper()
	host := strings.TrimPrefix(in.Base, "http://")
	for _, v := range append(protectedVariants(host), unprotectedVariants...) {
		code, body := rawCall(t, in.Base, v.method, v.target)
		if code != v.want {
			t.Errorf("%s %s: %d %s, want %d", v.method, v.target, code, strings.TrimSpace(body), v.want)
		}
		if code == 400 && v.code != "" && !strings.Contains(body, `"error":"`+v.code+`"`) {
			t.Errorf("%s %s: 400 %s, want the contract's %s", v.method, v.target, body, v.code)
		}
	}
	// An admitted visitor gets through on a variant, with a pass: the
	// variant does reach the protected handler.
	c := systemtest.Visitor(t)
	admitted(t, in, c, "sale")
	if code, _, m := systemtest.Call(t, c, "POST", in.Base+"/Api/Orders/", ""); code != 201 || m["handler"] != "orders" || m["pass"] != true {
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
		"/Some//Path/x;y=1.JSON/?q=A%20B": "/Some/Path/x;y=1.JSON/?q=A%20B",
		"/a%2Fb%5Cc":                      "/a/b%5Cc",
	} {
		code, body := rawCall(t, in.Base, "GET", target)
		hs := o.log()
		if len(hs) == 0 {
			t.Fatalf("GET %s: %d %s, never reached the origin", target, code, body)
		}
		if got := hs[len(hs)-1].URL; got != want {
			t.Errorf("GET %s reached the origin as %s, want %s", target, got, want)
		}
	}
}

// TestGatewayMethodOverride: a POST that an origin may route as GET (a
// _method in its query or in any body a framework reads one from) to a
// GET-protected path needs a pass; a POST with no body, which no framework
// reroutes, does not.
func TestGatewayMethodOverride(t *testing.T) {
	o := startLenientOrigin(t)
	in := frontOf(t, o.srv.URL)
	for _, r := range overrideProbes {
		code, body := rawSend(t, in.Base, "POST", r.target, r.body, r.headers...)
		if code != 403 || !strings.Contains(body, "pass_required") {
			t.Errorf("POST %s %q: %d %s, want 403 pass_required", r.target, r.headers, code, body)
		}
	}
	if code, _ := rawCall(t, in.Base, "POST", "/checkout/pay"); code != 404 {
		t.Errorf("a POST /checkout/pay with no body: %d, want the origin's 404 (not protected, no handler)", code)
	}
	noOriginHandlerWithoutPass(t, o.log())
}

// overrideProbes are POSTs to GET /checkout/pay (GET-protected) that an
// origin routes as GET: a form's _method (with any media type, none, or
// one Rack splits at ","), JSON's (Laravel), multipart, the query's.
var overrideProbes = []struct {
	target, body string
	headers      []string
}{
	{"/checkout/pay", "_method=GET", []string{"Content-Type", "application/x-www-form-urlencoded"}},
	{"/checkout/pay", "_method=GET", nil},
	{"/checkout/pay", "_method=GET", []string{"Content-Type", "application/x-www-form-urlencoded, text/plain"}},
	{"/checkout/pay", "_method=GET", []string{"Content-Type", "text/plain, application/x-www-form-urlencoded"}},
	{"/checkout/pay", `{"_method":"GET"}`, []string{"Content-Type", "application/json"}},
	{"/checkout/pay", "--b\r\nContent-Disposition: form-data; name=\"_method\"\r\n\r\nGET\r\n--b--\r\n",
		[]string{"Content-Type", "multipart/form-data; boundary=b"}},
	{"/checkout/pay?_method=GET", "{}", []string{"Content-Type", "application/json"}},
	{"/Checkout/Pay/?_method=get", "x", []string{"Content-Type", "text/plain"}},
	{"/checkout/pay", "_method=GET", []string{"Transfer-Encoding", "chunked"}},
}

// rawSend is rawCall with a body (framed by Content-Length unless the
// headers name Transfer-Encoding: then one chunk).
func rawSend(t *testing.T, base, method, target, body string, headers ...string) (int, string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	req := method + " " + target + " HTTP/1.1\r\nHost: " + strings.TrimPrefix(base, "http://") + "\r\nConnection: close\r\n"
	chunked := false
	for i := 0; i+1 < len(headers); i += 2 {
		req += headers[i] + ": " + headers[i+1] + "\r\n"
		chunked = chunked || strings.EqualFold(headers[i], "Transfer-Encoding")
	}
	if chunked {
		req += fmt.Sprintf("\r\n%x\r\n%s\r\n0\r\n\r\n", len(body), body)
	} else {
		req += fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)
	}
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// noOriginHandlerWithoutPass fails for every request the origin logged
// that reached one of its handlers without a pass (the unprotected "list"
// handler aside).
func noOriginHandlerWithoutPass(t *testing.T, hits []hit) {
	t.Helper()
	for _, h := range hits {
		if h.Handler != "" && h.Handler != "list" && !h.Pass {
			t.Errorf("%s %s reached the origin's %s handler without a pass", h.Method, h.URL, h.Handler)
		}
	}
}
