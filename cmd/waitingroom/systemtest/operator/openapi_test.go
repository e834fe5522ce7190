package operator

import (
	"slices"
	"testing"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/openapi"
)

// TestOpenAPIPublic drives every operation of the public API, the good
// answers and the refusals, validating each against the description the
// server serves, and holds the router and the description to each other.
func TestOpenAPIPublic(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_ROOMS": "default,hold", "WR_TARGET_ACTIVE": "2"})
	// Limits on, one read of the orders a minute: the 429's shape.
	limited := e.Start(map[string]string{"WR_RATE_LIMITS": "on", "WR_LIMIT_ORDERS_READ": "1/1m:1"})
	if got := systemtest.Do(t, "GET", in.Base+"/api/v1/openapi.json", "", nil).Raw; got != string(openapi.Public) {
		t.Errorf("the served description is not openapi.Public")
	}
	s := systemtest.LoadSpec(t, in.Base+"/api/v1/openapi.json")
	s.CheckRoutes(in.Server.Public(), false, "GET /", "GET /rooms/{room}", "GET /static/{*}")

	api := in.Base + "/api/v1"
	s.Call("GET", api+"/openapi.json", "", nil, 200)
	// Login.
	login := func(u string) string {
		return s.Call("POST", api+"/auth/login", "", map[string]string{"loginId": u, "password": systemtest.TestPassword}, 200).Body["accessToken"].(string)
	}
	access := login(systemtest.User(1))
	s.Call("POST", api+"/auth/login", "", map[string]string{"loginId": systemtest.User(1), "password": "wrong"}, 401)
	s.Call("POST", api+"/auth/login", "", `{"loginId":`, 400)
	// Rooms.
	s.Call("GET", api+"/rooms/default", "", nil, 200)
	s.Call("GET", api+"/rooms/nowhere", "", nil, 404)
	// A closed room refuses arrivals (a paused one takes them).
	if r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/hold", systemtest.TestAdminToken, map[string]any{"method": "reject", "message": "back soon"}); r.Status != 200 {
		t.Fatalf("closing hold: %d %s", r.Status, r.Raw)
	}
	if r := s.Call("POST", api+"/rooms/hold/enter", access, nil, 423); r.Body["error"] != "room_closed" {
		t.Fatalf("enter a closed room = %s, want room_closed", r.Raw)
	}
	s.Call("POST", api+"/rooms/nowhere/enter", access, nil, 404)
	s.Call("POST", api+"/rooms/default/enter", "", nil, 401)
	// Three users in a room that admits two: one READY, one WAITING.
	qt := s.Call("POST", api+"/rooms/default/enter", access, nil, 200).Body["queueToken"].(string)
	qt2 := s.Call("POST", api+"/rooms/default/enter", login(systemtest.User(2)), nil, 200).Body["queueToken"].(string)
	in.Admit("default")
	qt3 := s.Call("POST", api+"/rooms/default/enter", login(systemtest.User(3)), nil, 200).Body["queueToken"].(string)
	if st := s.Call("GET", api+"/rooms/default/position", qt3, nil, 200).Body; st["status"] != "WAITING" {
		t.Fatalf("user3: %v, want WAITING", st)
	}
	ready := s.Call("GET", api+"/rooms/default/position", qt, nil, 200).Body
	entry, _ := ready["entryToken"].(string)
	if ready["status"] != "READY" || entry == "" {
		t.Fatalf("user1: %v, want READY", ready)
	}
	s.Call("GET", api+"/rooms/hold/position", qt, nil, 403) // wrong_room
	s.Call("GET", api+"/rooms/default/position", "", nil, 401)
	// Streams.
	s.Stream(api+"/rooms/default/events", qt3)
	s.Call("GET", api+"/rooms/default/events", "", nil, 401)
	s.Websocket(in.Base, "default", qt3)
	s.Call("GET", api+"/rooms/default/ws", qt3, nil, 426)
	// Orders and products.
	s.Call("POST", api+"/orders", qt, map[string]any{"productId": 1, "quantity": 0}, 400)
	s.Call("POST", api+"/orders", qt, map[string]any{"productId": 1, "quantity": 1}, 403)
	s.Call("POST", api+"/orders", qt, map[string]any{"productId": 999, "quantity": 1}, 404, "X-Entry-Token", entry)
	s.Call("POST", api+"/orders", qt, map[string]any{"productId": 1, "quantity": 1}, 201, "X-Entry-Token", entry)
	e.Exec("UPDATE products SET stock = 0 WHERE id = 3")
	entry2 := s.Call("GET", api+"/rooms/default/position", qt2, nil, 200).Body["entryToken"].(string)
	s.Call("POST", api+"/orders", qt2, map[string]any{"productId": 3, "quantity": 1}, 409, "X-Entry-Token", entry2)
	s.Call("POST", api+"/orders", "", map[string]any{"productId": 1, "quantity": 1}, 401)
	if list := s.Call("GET", api+"/orders?room=default", access, nil, 200).Body["orders"].([]any); len(list) != 1 {
		t.Errorf("orders: %v, want the one placed", list)
	}
	s.Call("GET", api+"/orders", access, nil, 400)
	s.Call("GET", api+"/orders?room=default", "", nil, 401)
	s.Call("GET", api+"/products/1", "", nil, 200)
	s.Call("GET", api+"/products/x", "", nil, 400)
	s.Call("GET", api+"/products/999", "", nil, 404)
	// Leave, and what comes after it.
	s.Call("POST", api+"/rooms/default/leave", qt3, nil, 204)
	s.Call("GET", api+"/rooms/default/position", qt3, nil, 404)
	s.Call("POST", api+"/rooms/default/leave", "", nil, 401)
	// A rate limit's refusal.
	lt := systemtest.Do(t, "POST", limited.Base+"/api/v1/auth/login", "", map[string]string{"loginId": systemtest.User(9), "password": systemtest.TestPassword}).Str("accessToken")
	s.Call("GET", limited.Base+"/api/v1/orders?room=default", lt, nil, 200)
	if a := s.Call("GET", limited.Base+"/api/v1/orders?room=default", lt, nil, 429); a.Header.Get("Retry-After") == "" {
		t.Errorf("429 without Retry-After")
	}

	s.CheckDriven(s.Operations(false))
	t.Logf("driven: %v", s.Driven)
}

// TestOpenAPIGateway: in gateway mode the description is served under
// /_wr with its server there, names the gateway's own operations, and
// still matches the router exactly.
func TestOpenAPIGateway(t *testing.T) {
	o := systemtest.StartOrigin(t)
	in := systemtest.GatewayInstance(t, o, nil)
	s := systemtest.LoadSpec(t, in.Base+"/_wr/api/v1/openapi.json")
	if s.Prefix != "/_wr" {
		t.Fatalf("the served description's server is %q, want /_wr", s.Prefix)
	}
	s.CheckRoutes(in.Server.Public(), true, "GET /", "GET /rooms/{room}", "GET /static/{*}")
	api := in.Base + "/_wr/api/v1"
	s.HC = systemtest.Visitor(t) // a cookie jar: the visitor's identity and queue cookie
	s.Call("GET", api+"/openapi.json", "", nil, 200)
	s.Call("GET", in.Base+"/_wr/.well-known/jwks.json", "", nil, 200)
	s.Call("GET", api+"/rooms/sale/challenge", "", nil, 200)
	s.Call("GET", api+"/rooms/Not-Valid/challenge", "", nil, 404)
	qt := s.Call("POST", api+"/rooms/sale/enter", "", nil, 200).Body["queueToken"].(string)
	// The queue cookie is named per room in gateway mode (wr_queue_sale),
	// which OpenAPI cannot name: the bearer form here.
	s.Call("GET", api+"/rooms/sale/position", qt, nil, 200)
	var gatewayOnly []string
	for _, op := range s.Operations(true) {
		if !slices.Contains(s.Operations(false), op) {
			gatewayOnly = append(gatewayOnly, op)
		}
	}
	if len(gatewayOnly) != 2 {
		t.Errorf("gateway-only operations %v, want the challenge and the key set", gatewayOnly)
	}
	s.CheckDriven(gatewayOnly)
}

// TestOpenAPIAdmin drives every operation of the management port.
func TestOpenAPIAdmin(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(nil)
	withFaults := e.Start(map[string]string{"WR_FAULT_INJECTION": "on"})
	s := systemtest.LoadSpec(t, in.Admin+"/admin/openapi.json")
	if got := systemtest.Do(t, "GET", in.Admin+"/admin/openapi.json", "", nil).Raw; got != string(openapi.Admin) {
		t.Errorf("the served description is not openapi.Admin")
	}
	s.CheckRoutes(in.Server.Admin(), false, "GET /", "GET /admin/", "GET /admin/static/{*}")
	tok, adm := systemtest.TestAdminToken, in.Admin
	s.Call("GET", adm+"/metrics", "", nil, 200)
	s.Call("GET", adm+"/healthz", "", nil, 200)
	s.Call("GET", adm+"/readyz", "", nil, 200)
	s.Call("GET", adm+"/admin/openapi.json", "", nil, 200)
	s.Call("GET", adm+"/admin/rooms", tok, nil, 200)
	s.Call("GET", adm+"/admin/rooms?limit=1&prefix=d&busy=0", tok, nil, 200)
	s.Call("GET", adm+"/admin/rooms?limit=0", tok, nil, 400)
	s.Call("GET", adm+"/admin/rooms", "", nil, 401)
	s.Call("GET", adm+"/admin/rooms/default", tok, nil, 200)
	s.Call("GET", adm+"/admin/rooms/Not-Valid", tok, nil, 400)
	s.Call("GET", adm+"/admin/rooms/ghost", tok, nil, 404)
	s.Call("PUT", adm+"/admin/rooms/sale", tok, map[string]any{"targetActive": 3, "entryTtl": "90s", "mode": "adaptive",
		"method": "random", "opensAt": "2030-01-01T10:00:00Z", "message": "soon", "displayName": "Sale", "description": "Coats"}, 200)
	s.Call("PUT", adm+"/admin/rooms/sale", tok, map[string]any{"targetActiv": 3}, 400)
	s.Call("GET", adm+"/admin/rooms/sale/history", tok, nil, 200)
	s.Call("GET", adm+"/admin/rooms/sale/history?since=soon", tok, nil, 400)
	s.Call("GET", adm+"/admin/rooms/ghost/history", tok, nil, 404)
	in.Enter(systemtest.User(1), "sale")
	s.Call("DELETE", adm+"/admin/rooms/sale", tok, nil, 409)
	s.Call("DELETE", adm+"/admin/rooms/sale?force=true", tok, nil, 204)
	s.Call("DELETE", adm+"/admin/rooms/sale", tok, nil, 404)
	s.Call("DELETE", adm+"/admin/rooms/sale?force=maybe", tok, nil, 400)
	s.Call("GET", adm+"/admin/faults", tok, nil, 200)
	s.Call("PUT", adm+"/admin/faults", tok, map[string]any{"orderDelay": "10ms"}, 403)
	s.Call("PUT", withFaults.Admin+"/admin/faults", tok, map[string]any{"orderDelay": "0s"}, 200)
	s.Call("PUT", withFaults.Admin+"/admin/faults", tok, map[string]any{"orderDelay": "forever"}, 400)
	s.Call("GET", adm+"/admin/access", tok, nil, 200)
	s.Call("PUT", adm+"/admin/access", tok, map[string]any{"deny": []string{"198.51.100.0/24"}}, 200)
	s.Call("PUT", adm+"/admin/access", tok, map[string]any{"deny": []string{"not an address"}}, 400)
	s.Call("GET", adm+"/admin/stats", tok, nil, 200)
	s.Call("GET", adm+"/admin/stats?room=default", tok, nil, 200)
	s.Call("GET", adm+"/admin/stats?busy=maybe", tok, nil, 400)
	s.Call("GET", adm+"/admin/audit", tok, nil, 200)
	s.Call("GET", adm+"/admin/audit?limit=0", tok, nil, 400)
	s.CheckDriven(s.Operations(false))
	t.Logf("driven: %v", s.Driven)
}
