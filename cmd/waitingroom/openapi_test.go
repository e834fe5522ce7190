package main

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

	"waitingroom/server/openapi"
)

// The OpenAPI descriptions (package openapi) against the running server:
// every route is driven and every answer validated — status code, headers
// (X-Request-Id), body against its schema (the error shape, QueueStatus's
// fields: the documents are closed, so an undescribed field fails) — and
// the routes of each app must be exactly the operations described. The
// checks themselves are in openapi_check_test.go.

// spec is one served description and its checker; it records which
// operations the test drove and with which statuses.
type spec struct {
	t      *testing.T
	api    *openAPI       // the checker (openapi_check_test.go)
	raw    map[string]any // the description as JSON
	prefix string         // the server URL's path ("" for "/")
	hc     *http.Client

	mu     sync.Mutex
	driven map[string][]int // "GET /api/v1/rooms/{room}" → statuses seen
}

// loadSpec fetches the description served at url, checks it is valid
// OpenAPI 3.1 and builds its checker.
func loadSpec(t *testing.T, url string) *spec {
	t.Helper()
	res, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, res.Header.Get("Content-Type"))
	}
	api, err := parseOpenAPI(url, body)
	if err != nil {
		t.Fatal(oneLine("%s: %v", url, err))
	}
	if err := api.checkDocument(); err != nil {
		t.Fatal(oneLine("%s is not valid OpenAPI 3.1: %v", url, err))
	}
	return &spec{t: t, api: api, raw: api.doc, prefix: api.prefix, driven: map[string][]int{}, hc: client}
}

// answer is a response as the test read it.
type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

// call sends a request and validates its answer, which must have status
// want; a request the test means to be valid (want 2xx) is validated too.
// body: nil, a string (sent as is) or a value (JSON).
func (s *spec) call(method, url, bearer string, body any, want int, headers ...string) answer {
	s.t.Helper()
	newReq := func() *http.Request { return newRequest(s.t, method, url, bearer, body, headers...) }
	res, err := s.hc.Do(newReq())
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, url, err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	a := answer{status: res.StatusCode, header: res.Header, raw: raw}
	_ = json.Unmarshal(raw, &a.body)
	if a.status != want {
		s.t.Fatalf("%s %s: %d %s, want %d", method, url, a.status, raw, want)
	}
	vreq := newReq()
	if s.hc.Jar != nil {
		for _, c := range s.hc.Jar.Cookies(vreq.URL) {
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
func (s *spec) validate(req *http.Request, sent []byte, res *http.Response, body []byte, valid bool) {
	s.t.Helper()
	what := req.Method + " " + req.URL.RequestURI()
	r, err := s.api.route(req.Method, req.URL.EscapedPath())
	if err != nil {
		s.t.Errorf("%s: not in the description: %v", what, err)
		return
	}
	s.mu.Lock()
	s.driven[req.Method+" "+r.template] = append(s.driven[req.Method+" "+r.template], res.StatusCode)
	s.mu.Unlock()
	if valid {
		for _, p := range s.api.checkRequest(req, sent) {
			s.t.Errorf("%s: the request does not match the description: %s", what, p)
		}
	}
	for _, p := range s.api.checkResponse(req, res.StatusCode, res.Header, body) {
		s.t.Errorf("%s → %d: the answer does not match the description: %s", what, res.StatusCode, p)
	}
}

// operations are the operations the description names, "METHOD /path"
// (the path under the server URL); those marked x-gateway-mode: only are
// left out unless gateway is true.
func (s *spec) operations(gateway bool) []string {
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

// checkRoutes fails when app routes something the description lacks or
// the description names an operation app does not route. pages are the
// app's routes that are pages, not API (they must exist).
func (s *spec) checkRoutes(app *fiber.App, gateway bool, pages ...string) {
	s.t.Helper()
	routes := routesOf(app, s.prefix)
	described := s.operations(gateway)
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

// checkDriven fails for every operation of ops the test did not drive.
func (s *spec) checkDriven(ops []string) {
	s.t.Helper()
	for _, op := range ops {
		if len(s.driven[op]) == 0 {
			s.t.Errorf("%s was never driven: add a request for it", op)
		}
	}
}

// TestOpenAPIPublic drives every operation of the public API, the good
// answers and the refusals, validating each against the description the
// server serves, and holds the router and the description to each other.
func TestOpenAPIPublic(t *testing.T) {
	e := newEnv(t)
	in := e.start(map[string]string{"WR_ROOMS": "default,hold", "WR_TARGET_ACTIVE": "2"})
	// Limits on, one read of the orders a minute: the 429's shape.
	limited := e.start(map[string]string{"WR_RATE_LIMITS": "on", "WR_LIMIT_ORDERS_READ": "1/1m:1"})
	if got := do(t, "GET", in.base+"/api/v1/openapi.json", "", nil).raw; got != string(openapi.Public) {
		t.Errorf("the served description is not openapi.Public")
	}
	s := loadSpec(t, in.base+"/api/v1/openapi.json")
	s.checkRoutes(in.srv.Public(), false, "GET /", "GET /rooms/{room}", "GET /static/{*}")

	api := in.base + "/api/v1"
	s.call("GET", api+"/openapi.json", "", nil, 200)
	// Login.
	login := func(u string) string {
		return s.call("POST", api+"/auth/login", "", map[string]string{"loginId": u, "password": testPassword}, 200).body["accessToken"].(string)
	}
	access := login(user(1))
	s.call("POST", api+"/auth/login", "", map[string]string{"loginId": user(1), "password": "wrong"}, 401)
	s.call("POST", api+"/auth/login", "", `{"loginId":`, 400)
	// Rooms.
	s.call("GET", api+"/rooms/default", "", nil, 200)
	s.call("GET", api+"/rooms/nowhere", "", nil, 404)
	// A closed room refuses arrivals (a paused one takes them).
	if r := do(t, "PUT", in.admin+"/admin/rooms/hold", testAdminToken, map[string]any{"method": "reject", "message": "back soon"}); r.status != 200 {
		t.Fatalf("closing hold: %d %s", r.status, r.raw)
	}
	if r := s.call("POST", api+"/rooms/hold/enter", access, nil, 423); r.body["error"] != "room_closed" {
		t.Fatalf("enter a closed room = %s, want room_closed", r.raw)
	}
	s.call("POST", api+"/rooms/nowhere/enter", access, nil, 404)
	s.call("POST", api+"/rooms/default/enter", "", nil, 401)
	// Three users in a room that admits two: one READY, one WAITING.
	qt := s.call("POST", api+"/rooms/default/enter", access, nil, 200).body["queueToken"].(string)
	qt2 := s.call("POST", api+"/rooms/default/enter", login(user(2)), nil, 200).body["queueToken"].(string)
	in.admit("default")
	qt3 := s.call("POST", api+"/rooms/default/enter", login(user(3)), nil, 200).body["queueToken"].(string)
	if st := s.call("GET", api+"/rooms/default/position", qt3, nil, 200).body; st["status"] != "WAITING" {
		t.Fatalf("user3: %v, want WAITING", st)
	}
	ready := s.call("GET", api+"/rooms/default/position", qt, nil, 200).body
	entry, _ := ready["entryToken"].(string)
	if ready["status"] != "READY" || entry == "" {
		t.Fatalf("user1: %v, want READY", ready)
	}
	s.call("GET", api+"/rooms/hold/position", qt, nil, 403) // wrong_room
	s.call("GET", api+"/rooms/default/position", "", nil, 401)
	// Streams.
	s.stream(api+"/rooms/default/events", qt3)
	s.call("GET", api+"/rooms/default/events", "", nil, 401)
	s.websocket(in.base, "default", qt3)
	s.call("GET", api+"/rooms/default/ws", qt3, nil, 426)
	// Orders and products.
	s.call("POST", api+"/orders", qt, map[string]any{"productId": 1, "quantity": 0}, 400)
	s.call("POST", api+"/orders", qt, map[string]any{"productId": 1, "quantity": 1}, 403)
	s.call("POST", api+"/orders", qt, map[string]any{"productId": 999, "quantity": 1}, 404, "X-Entry-Token", entry)
	s.call("POST", api+"/orders", qt, map[string]any{"productId": 1, "quantity": 1}, 201, "X-Entry-Token", entry)
	e.exec("UPDATE products SET stock = 0 WHERE id = 3")
	entry2 := s.call("GET", api+"/rooms/default/position", qt2, nil, 200).body["entryToken"].(string)
	s.call("POST", api+"/orders", qt2, map[string]any{"productId": 3, "quantity": 1}, 409, "X-Entry-Token", entry2)
	s.call("POST", api+"/orders", "", map[string]any{"productId": 1, "quantity": 1}, 401)
	if list := s.call("GET", api+"/orders?room=default", access, nil, 200).body["orders"].([]any); len(list) != 1 {
		t.Errorf("orders: %v, want the one placed", list)
	}
	s.call("GET", api+"/orders", access, nil, 400)
	s.call("GET", api+"/orders?room=default", "", nil, 401)
	s.call("GET", api+"/products/1", "", nil, 200)
	s.call("GET", api+"/products/x", "", nil, 400)
	s.call("GET", api+"/products/999", "", nil, 404)
	// Leave, and what comes after it.
	s.call("POST", api+"/rooms/default/leave", qt3, nil, 204)
	s.call("GET", api+"/rooms/default/position", qt3, nil, 404)
	s.call("POST", api+"/rooms/default/leave", "", nil, 401)
	// A rate limit's refusal.
	lt := do(t, "POST", limited.base+"/api/v1/auth/login", "", map[string]string{"loginId": user(9), "password": testPassword}).str("accessToken")
	s.call("GET", limited.base+"/api/v1/orders?room=default", lt, nil, 200)
	if a := s.call("GET", limited.base+"/api/v1/orders?room=default", lt, nil, 429); a.header.Get("Retry-After") == "" {
		t.Errorf("429 without Retry-After")
	}

	s.checkDriven(s.operations(false))
	t.Logf("driven: %v", s.driven)
}

// stream opens an SSE stream and validates its response head.
func (s *spec) stream(url, queueToken string) {
	s.t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+queueToken)
	res, err := client.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	res.Body.Close() // a stream: its head is what is checked
	if res.StatusCode != 200 {
		s.t.Fatalf("events: %d", res.StatusCode)
	}
	s.validate(req, nil, res, nil, true)
}

// websocket opens a WebSocket (the token in the query) and validates its
// handshake's answer.
func (s *spec) websocket(base, room, queueToken string) {
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

// TestOpenAPIGateway: in gateway mode the description is served under
// /_wr with its server there, names the gateway's own operations, and
// still matches the router exactly.
func TestOpenAPIGateway(t *testing.T) {
	o := startOrigin(t)
	in := gatewayInstance(t, o, nil)
	s := loadSpec(t, in.base+"/_wr/api/v1/openapi.json")
	if s.prefix != "/_wr" {
		t.Fatalf("the served description's server is %q, want /_wr", s.prefix)
	}
	s.checkRoutes(in.srv.Public(), true, "GET /", "GET /rooms/{room}", "GET /static/{*}")
	api := in.base + "/_wr/api/v1"
	s.hc = visitor(t) // a cookie jar: the visitor's identity and queue cookie
	s.call("GET", api+"/openapi.json", "", nil, 200)
	s.call("GET", in.base+"/_wr/.well-known/jwks.json", "", nil, 200)
	s.call("GET", api+"/rooms/sale/challenge", "", nil, 200)
	s.call("GET", api+"/rooms/Not-Valid/challenge", "", nil, 404)
	qt := s.call("POST", api+"/rooms/sale/enter", "", nil, 200).body["queueToken"].(string)
	// The queue cookie is named per room in gateway mode (wr_queue_sale),
	// which OpenAPI cannot name: the bearer form here.
	s.call("GET", api+"/rooms/sale/position", qt, nil, 200)
	var gatewayOnly []string
	for _, op := range s.operations(true) {
		if !slices.Contains(s.operations(false), op) {
			gatewayOnly = append(gatewayOnly, op)
		}
	}
	if len(gatewayOnly) != 2 {
		t.Errorf("gateway-only operations %v, want the challenge and the key set", gatewayOnly)
	}
	s.checkDriven(gatewayOnly)
}

// TestOpenAPIAdmin drives every operation of the management port.
func TestOpenAPIAdmin(t *testing.T) {
	e := newEnv(t)
	in := e.start(nil)
	withFaults := e.start(map[string]string{"WR_FAULT_INJECTION": "on"})
	s := loadSpec(t, in.admin+"/admin/openapi.json")
	if got := do(t, "GET", in.admin+"/admin/openapi.json", "", nil).raw; got != string(openapi.Admin) {
		t.Errorf("the served description is not openapi.Admin")
	}
	s.checkRoutes(in.srv.Admin(), false, "GET /", "GET /admin/", "GET /admin/static/{*}")
	tok, adm := testAdminToken, in.admin
	s.call("GET", adm+"/metrics", "", nil, 200)
	s.call("GET", adm+"/healthz", "", nil, 200)
	s.call("GET", adm+"/readyz", "", nil, 200)
	s.call("GET", adm+"/admin/openapi.json", "", nil, 200)
	s.call("GET", adm+"/admin/rooms", tok, nil, 200)
	s.call("GET", adm+"/admin/rooms?limit=1&prefix=d&busy=0", tok, nil, 200)
	s.call("GET", adm+"/admin/rooms?limit=0", tok, nil, 400)
	s.call("GET", adm+"/admin/rooms", "", nil, 401)
	s.call("GET", adm+"/admin/rooms/default", tok, nil, 200)
	s.call("GET", adm+"/admin/rooms/Not-Valid", tok, nil, 400)
	s.call("GET", adm+"/admin/rooms/ghost", tok, nil, 404)
	s.call("PUT", adm+"/admin/rooms/sale", tok, map[string]any{"targetActive": 3, "entryTtl": "90s", "mode": "adaptive",
		"method": "random", "opensAt": "2030-01-01T10:00:00Z", "message": "soon", "displayName": "Sale", "description": "Coats"}, 200)
	s.call("PUT", adm+"/admin/rooms/sale", tok, map[string]any{"targetActiv": 3}, 400)
	s.call("GET", adm+"/admin/rooms/sale/history", tok, nil, 200)
	s.call("GET", adm+"/admin/rooms/sale/history?since=soon", tok, nil, 400)
	s.call("GET", adm+"/admin/rooms/ghost/history", tok, nil, 404)
	in.enter(user(1), "sale")
	s.call("DELETE", adm+"/admin/rooms/sale", tok, nil, 409)
	s.call("DELETE", adm+"/admin/rooms/sale?force=true", tok, nil, 204)
	s.call("DELETE", adm+"/admin/rooms/sale", tok, nil, 404)
	s.call("DELETE", adm+"/admin/rooms/sale?force=maybe", tok, nil, 400)
	s.call("GET", adm+"/admin/faults", tok, nil, 200)
	s.call("PUT", adm+"/admin/faults", tok, map[string]any{"orderDelay": "10ms"}, 403)
	s.call("PUT", withFaults.admin+"/admin/faults", tok, map[string]any{"orderDelay": "0s"}, 200)
	s.call("PUT", withFaults.admin+"/admin/faults", tok, map[string]any{"orderDelay": "forever"}, 400)
	s.call("GET", adm+"/admin/access", tok, nil, 200)
	s.call("PUT", adm+"/admin/access", tok, map[string]any{"deny": []string{"198.51.100.0/24"}}, 200)
	s.call("PUT", adm+"/admin/access", tok, map[string]any{"deny": []string{"not an address"}}, 400)
	s.call("GET", adm+"/admin/stats", tok, nil, 200)
	s.call("GET", adm+"/admin/stats?room=default", tok, nil, 200)
	s.call("GET", adm+"/admin/stats?busy=maybe", tok, nil, 400)
	s.call("GET", adm+"/admin/audit", tok, nil, 200)
	s.call("GET", adm+"/admin/audit?limit=0", tok, nil, 400)
	s.checkDriven(s.operations(false))
	t.Logf("driven: %v", s.driven)
}
