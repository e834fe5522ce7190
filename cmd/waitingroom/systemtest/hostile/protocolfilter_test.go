package hostile

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/token"
)

// rawConn is one client connection speaking HTTP/1.1 byte by byte, for
// requests no client library would send.
type rawConn struct {
	t testing.TB
	c net.Conn
	r *bufio.Reader
}

func dialRaw(t testing.TB, base string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, r: bufio.NewReader(c)}
}

func (rc *rawConn) send(s string) {
	rc.t.Helper()
	if _, err := io.WriteString(rc.c, s); err != nil {
		rc.t.Fatalf("write: %v", err)
	}
}

// response reads one response, failing the test unless it arrives within d.
func (rc *rawConn) response(d time.Duration) (*http.Response, string) {
	rc.t.Helper()
	_ = rc.c.SetReadDeadline(time.Now().Add(d))
	res, err := http.ReadResponse(rc.r, nil)
	if err != nil {
		rc.t.Fatalf("no response within %v: %v", d, err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		rc.t.Fatalf("response body: %v", err)
	}
	return res, string(body)
}

// closedByServer reports whether the server closes the connection (EOF)
// within d without sending anything more.
func (rc *rawConn) closedByServer(d time.Duration) bool {
	_ = rc.c.SetReadDeadline(time.Now().Add(d))
	b, err := rc.r.ReadByte()
	if err == nil {
		rc.t.Errorf("the server sent more after the refusal: %q…", b)
		return false
	}
	return err == io.EOF || strings.Contains(err.Error(), "reset")
}

// wantRefusal checks a refusal: status, the contract's JSON form (exactly
// "error" and "message") with code, and none of the secrets in it.
func wantRefusal(t testing.TB, res *http.Response, body string, status int, code string, secrets ...string) {
	t.Helper()
	var doc map[string]string
	if err := json.Unmarshal([]byte(body), &doc); err != nil || len(doc) != 2 || doc["message"] == "" {
		t.Errorf("body %q is not the contract's {error, message}", body)
	}
	if res.StatusCode != status || doc["error"] != code || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		t.Errorf("got %d %s %q, want %d with error %q in JSON", res.StatusCode, res.Header.Get("Content-Type"), body, status, code)
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(body, s) {
			t.Errorf("the refusal %q echoes %q from the request", body, s)
		}
	}
}

// get is a plain request on rc that must be answered 200: the connection
// still serves after a refusal.
func (rc *rawConn) get(path string) {
	rc.t.Helper()
	rc.send("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n")
	if res, body := rc.response(5 * time.Second); res.StatusCode != 200 {
		rc.t.Fatalf("GET %s after the refusal = %d %s", path, res.StatusCode, body)
	}
}

func request(method, path string, body []byte, headers ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", method, path, len(body))
	for _, h := range headers {
		if h != "" {
			b.WriteString(h + "\r\n")
		}
	}
	b.WriteString("\r\n")
	b.Write(body)
	return b.String()
}

func gzipped(b []byte) []byte {
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return out.Bytes()
}

// TestCompressedBodiesRefused: a body with any Content-Encoding but
// identity gets 415 unsupported_encoding on the public and the management
// port, whatever the coding, its case, stacking or header repetition; the
// connection goes on serving; identity is accepted.
func TestCompressedBodiesRefused(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(nil)
	login := []byte(`{"loginId":"user1","password":"pw"}`)
	targets := []struct {
		name, base, method, path, auth, after string
		body                                  []byte
	}{
		{"login", in.Base, "POST", "/api/v1/auth/login", "", "/api/v1/products/1", login},
		{"order", in.Base, "POST", "/api/v1/orders", "Authorization: Bearer x", "/api/v1/products/1", []byte(`{"productId":1,"quantity":1}`)},
		{"admin", in.Admin, "PUT", "/admin/rooms/default", "Authorization: Bearer " + systemtest.TestAdminToken, "/healthz", []byte(`{"targetActive":7}`)},
	}
	encodings := [][]string{
		{"Content-Encoding: gzip"}, {"Content-Encoding: deflate"}, {"Content-Encoding: br"},
		{"Content-Encoding: gzip, gzip"}, {"Content-Encoding: identity, gzip"}, {"content-encoding: GZIP"},
		{"Content-Encoding: x-anything"}, {"Content-Encoding: identity", "Content-Encoding: gzip"},
	}
	for _, tg := range targets {
		rc := dialRaw(t, tg.base)
		for _, enc := range encodings {
			rc.send(request(tg.method, tg.path, gzipped(tg.body), append(enc, tg.auth)...))
			res, body := rc.response(5 * time.Second)
			wantRefusal(t, res, body, 415, "unsupported_encoding")
			rc.get(tg.after)
		}
	}
	if got, want := in.Metric("waitingroom_protocol_refused_total"), float64(len(targets)*len(encodings)); got != want {
		t.Errorf("waitingroom_protocol_refused_total = %v, want %v", got, want)
	}
	if r := in.AdminRoom("default"); r.Num("targetActive") == 7 {
		t.Error("a refused admin body was applied")
	}
	// identity is no coding at all.
	rc := dialRaw(t, in.Base)
	rc.send(request("POST", "/api/v1/auth/login", login, "Content-Encoding: identity"))
	if res, body := rc.response(5 * time.Second); res.StatusCode != 200 {
		t.Fatalf("login with Content-Encoding: identity = %d %s", res.StatusCode, body)
	}
}

// bomb is gzip(gzip(mib MiB of zeros)): the inner layer is mib copies of
// one gzip member (a gzip reader reads concatenated members), so it is
// built in milliseconds; it is a few hundred bytes and inflates to mib MiB.
func bomb(mib int) []byte {
	member := gzipped(make([]byte, 1<<20))
	var out bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&out, gzip.BestCompression)
	for range mib {
		_, _ = zw.Write(member)
	}
	_ = zw.Close()
	return out.Bytes()
}

// childPID finds the child server process serving on base's port.
func childPID(t *testing.T, base string) int {
	t.Helper()
	want := []byte("\x00WR_HTTP_ADDR=" + strings.TrimPrefix(base, "http://") + "\x00")
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		env, err := os.ReadFile(d + "/environ")
		if err == nil && bytes.Contains(env, want) && bytes.Contains(env, []byte("WR_TEST_CHILD=serve")) {
			pid, _ := strconv.Atoi(filepath.Base(d))
			return pid
		}
	}
	t.Fatal("the child server's process was not found")
	return 0
}

// rssKiB reads a process's resident set size.
func rssKiB(t *testing.T, pid int) int {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// TestDecompressionBombLeavesMemoryFlat sends a 256 MiB double-gzip bomb
// of under 1 KiB to login, orders and the admin API of a server process of
// its own, three times each: each gets 415, the process's RSS grows by
// less than 16 MiB, and each connection then serves a normal request.
func TestDecompressionBombLeavesMemoryFlat(t *testing.T) {
	e := systemtest.NewEnv(t)
	in, _ := e.StartChild("4096")
	b := bomb(256)
	if len(b) > 1024 {
		t.Fatalf("the bomb is %d bytes", len(b))
	}
	access, _ := token.New(token.Config{Secret: systemtest.TestSecret}).IssueAccess("1", time.Hour)
	qt := systemtest.Do(t, "POST", in.Base+"/api/v1/rooms/default/enter", access, nil).Str("queueToken")
	if qt == "" {
		t.Fatal("no queue token")
	}
	pid := childPID(t, in.Base)
	// Warm up: one normal request of each kind, so pools and buffers exist.
	systemtest.Do(t, "POST", in.Base+"/api/v1/auth/login", "", map[string]string{"loginId": systemtest.User(1), "password": systemtest.TestPassword})
	systemtest.Do(t, "GET", in.Admin+"/admin/rooms/default", systemtest.TestAdminToken, nil)
	before := rssKiB(t, pid)

	for _, tg := range []struct{ base, method, path, after string }{
		{in.Base, "POST", "/api/v1/auth/login", "/api/v1/products/1"},
		{in.Base, "POST", "/api/v1/orders", "/api/v1/products/1"},
		{in.Admin, "PUT", "/admin/rooms/default", "/healthz"},
	} {
		rc := dialRaw(t, tg.base)
		auth := "Authorization: Bearer " + qt
		if tg.base == in.Admin {
			auth = "Authorization: Bearer " + systemtest.TestAdminToken
		}
		for range 3 {
			rc.send(request(tg.method, tg.path, b, "Content-Encoding: gzip, gzip", auth, "X-Entry-Token: AAAAAAAAAAAAAAAAAAAAAA"))
			res, body := rc.response(30 * time.Second)
			wantRefusal(t, res, body, 415, "unsupported_encoding")
		}
		rc.get(tg.after)
	}
	after := rssKiB(t, pid)
	t.Logf("RSS %d KiB before, %d KiB after nine bombs", before, after)
	if after-before >= 16<<10 {
		t.Fatalf("RSS grew by %d KiB: the bombs were inflated", after-before)
	}
}

// TestParserErrorsEchoNothing: requests fasthttp's parser or Fiber's router
// refuse, and methods no one knows, are answered in the contract's JSON
// with a fixed text: nothing of the request (cookie, Authorization, path)
// comes back.
func TestParserErrorsEchoNothing(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(nil)
	const cookie, bearer, marker = "wr_queue=SECRET-COOKIE-VALUE", "SECRET-BEARER-VALUE", "PATH-MARKER"
	secrets := []string{"SECRET-COOKIE-VALUE", bearer, marker, "Cookie", "Authorization"}
	hdrs := "Host: x\r\nCookie: " + cookie + "\r\nAuthorization: Bearer " + bearer + "\r\n"
	cases := []struct {
		name, req  string
		status     int
		code       string
		publicOnly bool
	}{
		{"two Content-Length", "POST /api/v1/auth/login?" + marker + " HTTP/1.1\r\n" + hdrs + "Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}", 400, "invalid_request", false},
		{"space in a header name", "GET /api/v1/products/1?" + marker + " HTTP/1.1\r\n" + hdrs + "Bad Name: x\r\n\r\n", 400, "invalid_request", false},
		{"header line without a colon before others", "GET /api/v1/products/1?" + marker + " HTTP/1.1\r\n" + hdrs + "NoColon\r\nX-After: 1\r\n\r\n", 400, "invalid_request", false},
		{"unsupported Transfer-Encoding", "POST /api/v1/auth/login HTTP/1.1\r\n" + hdrs + "Transfer-Encoding: " + marker + "\r\n\r\n", 400, "invalid_request", false},
		{"unknown path", "GET /" + marker + " HTTP/1.1\r\n" + hdrs + "\r\n", 404, "not_found", false},
		{"unknown API path", "GET /api/v1/" + marker + " HTTP/1.1\r\n" + hdrs + "\r\n", 404, "not_found", true},
		{"known path, wrong method", "PUT /api/v1/orders?" + marker + " HTTP/1.1\r\n" + hdrs + "Content-Length: 0\r\n\r\n", 405, "method_not_allowed", true},
		{"lowercase method", "get /api/v1/products/1?" + marker + " HTTP/1.1\r\n" + hdrs + "\r\n", 400, "invalid_request", false},
		{"unknown method", marker + " /api/v1/products/1 HTTP/1.1\r\n" + hdrs + "\r\n", 400, "invalid_request", false},
	}
	for _, base := range []string{in.Base, in.Admin} {
		for _, tc := range cases {
			if tc.publicOnly && base == in.Admin {
				continue // the management port has no /api
			}
			t.Run(tc.name, func(t *testing.T) {
				rc := dialRaw(t, base)
				rc.send(tc.req)
				res, body := rc.response(5 * time.Second)
				wantRefusal(t, res, body, tc.status, tc.code, secrets...)
			})
		}
	}
}

// TestLengthAndChunkedClosesConnection: a request with both
// Content-Length and Transfer-Encoding gets 400 and the connection is
// closed, so a request smuggled behind it is never answered.
func TestLengthAndChunkedClosesConnection(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(nil)
	smuggled := "GET /api/v1/products/1 HTTP/1.1\r\nHost: x\r\n\r\n"
	body := `{"loginId":"user1","password":"pw"}`
	chunked := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body)
	for name, framing := range map[string]string{
		"length first":        "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n",
		"chunked first":       "Transfer-Encoding: chunked\r\nContent-Length: 4\r\n",
		"identity and length": "Transfer-Encoding: identity\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			for _, base := range []string{in.Base, in.Admin} {
				rc := dialRaw(t, base)
				payload := chunked
				if strings.Contains(framing, "identity") {
					payload = body
				}
				rc.send("POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + framing + "\r\n" + payload + smuggled)
				res, got := rc.response(5 * time.Second)
				wantRefusal(t, res, got, 400, "invalid_request")
				if !res.Close {
					t.Error("the refusal does not say Connection: close")
				}
				if !rc.closedByServer(5 * time.Second) {
					t.Error("the connection stayed open")
				}
			}
		})
	}
	// Chunked alone is fine.
	rc := dialRaw(t, in.Base)
	rc.send("POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked)
	if res, got := rc.response(5 * time.Second); res.StatusCode != 200 {
		t.Fatalf("a chunked login = %d %s", res.StatusCode, got)
	}
}

// TestHeaderLineWithoutColon: a last header line without a colon is
// answered 400 at once (fasthttp alone waited for its 10 s read timeout
// and answered 408), on a fresh connection and on a kept-alive one; the
// guard leaves well-formed requests alone, also requests without headers.
func TestHeaderLineWithoutColon(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(nil)
	within := 3 * time.Second // well below the 10 s read timeout
	for _, base := range []string{in.Base, in.Admin} {
		for _, req := range []string{
			"GET /healthz HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n",
			"GET /healthz HTTP/1.1\r\nNoColon\r\n\r\n",
			"GET /healthz HTTP/1.1\nHost: x\nNoColon\n\n",
			"GET /healthz HTTP/1.1\r\nHost: x\r\nFirst\r\nSecond\r\n\r\n",
		} {
			rc := dialRaw(t, base)
			rc.send(req)
			res, body := rc.response(within)
			wantRefusal(t, res, body, 400, "invalid_request")
		}
	}
	// Kept alive: a good request (with a body), then the bad one.
	rc := dialRaw(t, in.Base)
	rc.send(request("POST", "/api/v1/auth/login", []byte(`{"loginId":"user1","password":"pw"}`)))
	if res, body := rc.response(5 * time.Second); res.StatusCode != 200 {
		t.Fatalf("login = %d %s", res.StatusCode, body)
	}
	rc.send("GET /api/v1/products/1 HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n")
	res, body := rc.response(within)
	wantRefusal(t, res, body, 400, "invalid_request")

	// Well-formed requests pass: a folded value, no headers at all (HTTP/1.0),
	// bodies split across writes.
	rc = dialRaw(t, in.Base)
	rc.send("GET /api/v1/products/1 HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n b\r\n\r\n")
	if res, body := rc.response(5 * time.Second); res.StatusCode != 200 {
		t.Fatalf("folded header = %d %s", res.StatusCode, body)
	}
	rc = dialRaw(t, in.Base)
	rc.send("GET /api/v1/products/1 HTTP/1.0\r\n\r\n")
	if res, body := rc.response(5 * time.Second); res.StatusCode != 200 {
		t.Fatalf("HTTP/1.0 without headers = %d %s", res.StatusCode, body)
	}
	rc = dialRaw(t, in.Base)
	req := request("POST", "/api/v1/auth/login", []byte(`{"loginId":"user1","password":"pw"}`))
	for i := 0; i < len(req); i += 7 {
		rc.send(req[i:min(i+7, len(req))])
	}
	if res, body := rc.response(5 * time.Second); res.StatusCode != 200 {
		t.Fatalf("a login sent in pieces = %d %s", res.StatusCode, body)
	}
}

// TestHeaderSize: 16 KiB of request line and headers: a 5,000-byte cookie
// passes, 40 KiB gets 431 in the contract's JSON.
func TestHeaderSize(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(nil)
	cookie := "shop_session=" + strings.Repeat("c", 5000)
	if r := systemtest.Do(t, "GET", in.Base+"/api/v1/products/1", "", nil, "Cookie", cookie); r.Status != 200 {
		t.Fatalf("5,000-byte cookie = %d %s", r.Status, r.Raw)
	}
	rc := dialRaw(t, in.Base)
	rc.send("GET /api/v1/products/1 HTTP/1.1\r\nHost: x\r\nCookie: shop_session=" + strings.Repeat("c", 40<<10) + "\r\n\r\n")
	res, body := rc.response(5 * time.Second)
	wantRefusal(t, res, body, 431, "headers_too_large", strings.Repeat("c", 64))
	// Others are unaffected meanwhile.
	if r := systemtest.Do(t, "GET", in.Base+"/api/v1/products/1", "", nil); r.Status != 200 {
		t.Fatalf("a normal request after the 431 = %d", r.Status)
	}
}

// TestTimeoutAndUpgradeCodes: the 408 of a request that does not arrive in
// time and the 426 of a WebSocket endpoint asked without an upgrade have
// their own codes (they said "error").
func TestTimeoutAndUpgradeCodes(t *testing.T) {
	systemtest.LongScenario(t)
	e := systemtest.NewEnv(t)
	in := e.Start(nil)
	qt := in.Enter(systemtest.User(1), "default").Str("queueToken")
	if r := systemtest.Do(t, "GET", in.Base+"/api/v1/rooms/default/ws", qt, nil); r.Status != 426 || r.Str("error") != "upgrade_required" {
		t.Fatalf("ws without upgrade = %d %s", r.Status, r.Raw)
	}
	// A kept-alive connection whose next request stops halfway: 408 after
	// the read timeout (10 s).
	rc := dialRaw(t, in.Base)
	rc.get("/api/v1/products/1")
	rc.send("GET /api/v1/products/1 HTTP/1.1\r\nHost: x\r\n")
	res, body := rc.response(20 * time.Second)
	wantRefusal(t, res, body, 408, "request_timeout")
}

// TestAdminBodiesAndNames: on the admin API an unknown field is a 400
// naming it (and nothing changes), an invalid room name is a 400; public
// bodies ignore unknown fields.
func TestAdminBodiesAndNames(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(nil)
	before := in.AdminRoom("default").Num("targetActive")
	r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/default", systemtest.TestAdminToken, `{"targetActiv":9}`)
	if r.Status != 400 || r.Str("error") != "invalid_request" || !strings.Contains(r.Str("message"), `"targetActiv"`) {
		t.Fatalf("unknown field = %d %s", r.Status, r.Raw)
	}
	if got := in.AdminRoom("default").Num("targetActive"); got != before {
		t.Fatalf("targetActive changed to %d by a refused body", got)
	}
	long := strings.Repeat("x", 500)
	if r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/default", systemtest.TestAdminToken, `{"`+long+`":1}`); r.Status != 400 || strings.Contains(r.Raw, long[:100]) {
		t.Fatalf("long unknown field = %d %s", r.Status, r.Raw)
	}
	if r := systemtest.Do(t, "PUT", in.Admin+"/admin/access", systemtest.TestAdminToken, `{"deny":[],"alow":[]}`); r.Status != 400 || !strings.Contains(r.Str("message"), `"alow"`) {
		t.Fatalf("unknown access field = %d %s", r.Status, r.Raw)
	}
	for _, m := range []string{"GET", "PUT"} {
		for _, name := range []string{"UPPER", "%7Bx%7D", strings.Repeat("a", 65)} {
			if r := systemtest.Do(t, m, in.Admin+"/admin/rooms/"+name, systemtest.TestAdminToken, `{"targetActive":3}`); r.Status != 400 || r.Str("error") != "invalid_request" {
				t.Errorf("%s invalid room %q = %d %s", m, name, r.Status, r.Raw)
			}
		}
	}
	if r := systemtest.Do(t, "GET", in.Admin+"/admin/rooms/nosuchroom", systemtest.TestAdminToken, nil); r.Status != 404 {
		t.Errorf("a valid unknown room = %d %s", r.Status, r.Raw)
	}
	// Public bodies: an unknown field is ignored.
	if r := systemtest.Do(t, "POST", in.Base+"/api/v1/auth/login", "", map[string]string{"loginId": systemtest.User(1), "password": systemtest.TestPassword, "client": "v2"}); r.Status != 200 {
		t.Fatalf("login with an extra field = %d %s", r.Status, r.Raw)
	}
}
