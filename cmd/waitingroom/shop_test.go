package main

// What the shop tests share, of the dashboard's panel (dashboard_shop_test.go)
// and of GET /admin/stats' shop (stats_shop_test.go): an origin that fails
// on demand, a gateway in front of it, requests through the gateway and
// forward-auth decisions.

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"waitingroom/server/pass"
)

// failingOrigin answers 200, or 500 while fail is set; /cut closes the
// connection without an answer (the gateway's bad_gateway).
type failingOrigin struct {
	srv  *httptest.Server
	fail atomic.Bool
}

func startFailingOrigin(t *testing.T) *failingOrigin {
	t.Helper()
	o := &failingOrigin{}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/cut":
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		case o.fail.Load():
			http.Error(w, "down", http.StatusInternalServerError)
		default:
			_, _ = w.Write([]byte("ok"))
		}
	}))
	t.Cleanup(o.srv.Close)
	return o
}

// shopGateway is an instance on Redis alone in gateway mode in front of
// o, protecting GET /checkout/* for room sale.
func shopGateway(t *testing.T, o *failingOrigin) *instance {
	t.Helper()
	return newRedisOnlyEnv(t).start(map[string]string{"WR_UPSTREAM": o.srv.URL, "WR_PROTECT": "GET /checkout/*=sale",
		"WR_PASS_KEY": pass.GenerateKey(), "WR_ROOMS": "sale", "WR_UPSTREAM_TIMEOUT": "2s"})
}

// through sends a GET for path through in's gateway, asking for JSON, and
// checks its status.
func through(t *testing.T, in *instance, path string, want int) {
	t.Helper()
	req, _ := http.NewRequest("GET", in.base+path, nil)
	req.Header.Set("Accept", "application/json")
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	res.Body.Close()
	if res.StatusCode != want {
		t.Fatalf("GET %s through the gateway = %d, want %d", path, res.StatusCode, want)
	}
}

// shopDecisions has a new visitor ask in's forward auth about an
// unprotected request (allowed) and a protected one without a pass
// (no_pass), and returns the visitor.
func shopDecisions(t *testing.T, in *instance) *http.Client {
	t.Helper()
	c := visitor(t)
	if code, _, _ := ask(t, in, c, false, "GET", "/public"); code != 200 {
		t.Fatalf("unprotected decision = %d, want 200", code)
	}
	if code, _, _ := ask(t, in, c, false, "POST", "/api/orders"); code != 403 {
		t.Fatalf("protected decision without a pass = %d, want 403", code)
	}
	return c
}
