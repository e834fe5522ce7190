package systemtest

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fasthttp/websocket"
	"github.com/gofiber/fiber/v2"
)

// The OpenAPI descriptions (package openapi) against the running server:
// every route is driven and every answer validated — status code, headers
// (X-Request-Id), body against its schema (the error shape, QueueStatus's
// fields: the documents are closed, so an undescribed field fails) — and
// the routes of each app must be exactly the operations described. The
// checks themselves are in openapi_check.go.

// Spec is one served description and its checker; it records which
// operations the test drove and with which statuses.
type Spec struct {
	t      *testing.T
	api    *OpenAPI       // the checker (openapi_check.go)
	raw    map[string]any // the description as JSON
	Prefix string         // the server URL's path ("" for "/")
	HC     *http.Client

	mu     sync.Mutex
	Driven map[string][]int // "GET /api/v1/rooms/{room}" → statuses seen
}

// LoadSpec fetches the description served at url, checks it is valid
// OpenAPI 3.1 and builds its checker.
func LoadSpec(t *testing.T, url string) *Spec {
	t.Helper()
	res, err := Client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, res.Header.Get("Content-Type"))
	}
	api, err := ParseOpenAPI(url, body)
	if err != nil {
		t.Fatal(oneLine("%s: %v", url, err))
	}
	if err := api.CheckDocument(); err != nil {
		t.Fatal(oneLine("%s is not valid OpenAPI 3.1: %v", url, err))
	}
	return &Spec{t: t, api: api, raw: api.doc, Prefix: api.prefix, Driven: map[string][]int{}, HC: Client}
}

// Answer is a response as the test read it (Spec.Call).
type Answer struct {
	status int
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

// Call sends a request and validates its answer, which must have status
// want; a request the test means to be valid (want 2xx) is validated too.
// body: nil, a string (sent as is) or a value (JSON).
func (s *Spec) Call(method, url, bearer string, body any, want int, headers ...string) Answer {
	s.t.Helper()
	newReq := func() *http.Request { return newRequest(s.t, method, url, bearer, body, headers...) }
	res, err := s.HC.Do(newReq())
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, url, err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	a := Answer{status: res.StatusCode, Header: res.Header, Raw: raw}
	_ = json.Unmarshal(raw, &a.Body)
	if a.status != want {
		s.t.Fatalf("%s %s: %d %s, want %d", method, url, a.status, raw, want)
	}
	vreq := newReq()
	if s.HC.Jar != nil {
		for _, c := range s.HC.Jar.Cookies(vreq.URL) {
			vreq.AddCookie(c) // as the client sent them
		}
	}
	var sent []byte
	if vreq.Body != nil {
		sent, _ = io.ReadAll(vreq.Body)
	}
	s.validate(vreq, sent, res, raw, want < 300)
	return a
}

// validate checks res and its body (and req with its body, when valid is
// true) against the description and records the operation as driven.
func (s *Spec) validate(req *http.Request, sent []byte, res *http.Response, body []byte, valid bool) {
	s.t.Helper()
	what := req.Method + " " + req.URL.RequestURI()
	r, err := s.api.Route(req.Method, req.URL.EscapedPath())
	if err != nil {
		s.t.Errorf("%s: not in the description: %v", what, err)
		return
	}
	s.mu.Lock()
	s.Driven[req.Method+" "+r.Template] = append(s.Driven[req.Method+" "+r.Template], res.StatusCode)
	s.mu.Unlock()
	if valid {
		for _, p := range s.api.CheckRequest(req, sent) {
			s.t.Errorf("%s: the request does not match the description: %s", what, p)
		}
	}
	for _, p := range s.api.CheckResponse(req, res.StatusCode, res.Header, body) {
		s.t.Errorf("%s → %d: the answer does not match the description: %s", what, res.StatusCode, p)
	}
}

// Operations are the operations the description names, "METHOD /path"
// (the path under the server URL); those marked x-gateway-mode: only are
// left out unless gateway is true.
func (s *Spec) Operations(gateway bool) []string {
	var ops []string
	pathItems, _ := s.raw["paths"].(map[string]any)
	for path, item := range pathItems {
		for method, o := range item.(map[string]any) {
			switch method {
			case "get", "put", "post", "delete", "patch", "options":
			default:
				continue
			}
			if mode, _ := o.(map[string]any)["x-gateway-mode"].(string); mode == "only" && !gateway {
				continue
			}
			ops = append(ops, strings.ToUpper(method)+" "+path)
		}
	}
	slices.Sort(ops)
	return ops
}

// routesOf are an app's routes as "METHOD /path" in the description's
// form ({param}, {*} for a wildcard), under prefix (which is cut off);
// HEAD (Fiber's twin of every GET) and middleware are left out.
func routesOf(app *fiber.App, prefix string) []string {
	var out []string
	for _, r := range app.GetRoutes(true) {
		if r.Method == fiber.MethodHead {
			continue
		}
		p := strings.TrimPrefix(r.Path, prefix)
		if p == "" {
			p = "/"
		}
		segs := strings.Split(p, "/")
		for i, seg := range segs {
			switch {
			case strings.HasPrefix(seg, ":"):
				segs[i] = "{" + strings.TrimSuffix(seg[1:], "?") + "}"
			case seg == "*":
				segs[i] = "{*}"
			}
		}
		out = append(out, r.Method+" "+strings.Join(segs, "/"))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// CheckRoutes fails when app routes something the description lacks or
// the description names an operation app does not route. pages are the
// app's routes that are pages, not API (they must exist).
func (s *Spec) CheckRoutes(app *fiber.App, gateway bool, pages ...string) {
	s.t.Helper()
	routes := routesOf(app, s.Prefix)
	described := s.Operations(gateway)
	for _, p := range pages {
		if !slices.Contains(routes, p) {
			s.t.Errorf("page %s is not routed: the list of pages is stale", p)
		}
	}
	for _, r := range routes {
		if !slices.Contains(described, r) && !slices.Contains(pages, r) {
			s.t.Errorf("route %s is not in the description", r)
		}
	}
	for _, d := range described {
		if !slices.Contains(routes, d) {
			s.t.Errorf("the description names %s, which is not routed", d)
		}
	}
}

// CheckDriven fails for every operation of ops the test did not drive.
func (s *Spec) CheckDriven(ops []string) {
	s.t.Helper()
	for _, op := range ops {
		if len(s.Driven[op]) == 0 {
			s.t.Errorf("%s was never driven: add a request for it", op)
		}
	}
}

// Stream opens an SSE stream and validates its response head.
func (s *Spec) Stream(url, queueToken string) {
	s.t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+queueToken)
	res, err := Client.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	res.Body.Close() // a stream: its head is what is checked
	if res.StatusCode != 200 {
		s.t.Fatalf("events: %d", res.StatusCode)
	}
	s.validate(req, nil, res, nil, true)
}

// Websocket opens a WebSocket (the token in the query) and validates its
// handshake's answer.
func (s *Spec) Websocket(base, room, queueToken string) {
	s.t.Helper()
	url := base + "/api/v1/rooms/" + room + "/ws?token=" + queueToken
	c, res, err := websocket.DefaultDialer.Dial(strings.Replace(url, "http://", "ws://", 1), nil)
	if err != nil {
		s.t.Fatalf("ws: %v", err)
	}
	c.Close()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	s.validate(req, nil, res, nil, true)
}
