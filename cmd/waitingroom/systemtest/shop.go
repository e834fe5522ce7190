package systemtest

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"waitingroom/server/pass"
)

// FailingOrigin answers 200, or 500 while fail is set; /cut closes the
// connection without an answer (the gateway's bad_gateway).
type FailingOrigin struct {
	srv  *httptest.Server
	Fail atomic.Bool
}

func StartFailingOrigin(t *testing.T) *FailingOrigin {
	t.Helper()
	o := &FailingOrigin{}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/cut":
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		case o.Fail.Load():
			http.Error(w, "down", http.StatusInternalServerError)
		default:
			_, _ = w.Write([]byte("ok"))
		}
	}))
	t.Cleanup(o.srv.Close)
	return o
}

// ShopGateway is an instance on Redis alone in gateway mode in front of
// o, protecting GET /checkout/* for room sale.
func ShopGateway(t *testing.T, o *FailingOrigin) *Instance {
	t.Helper()
	return NewRedisOnlyEnv(t).Start(map[string]string{"WR_UPSTREAM": o.srv.URL, "WR_PROTECT": "GET /checkout/*=sale",
		"WR_PASS_KEY": pass.GenerateKey(), "WR_ROOMS": "sale", "WR_UPSTREAM_TIMEOUT": "2s"})
}

// Through sends a GET for path through in's gateway, asking for JSON, and
// checks its status.
func Through(t *testing.T, in *Instance, path string, want int) {
	t.Helper()
	req, _ := http.NewRequest("GET", in.Base+path, nil)
	req.Header.Set("Accept", "application/json")
	res, err := Client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	res.Body.Close()
	if res.StatusCode != want {
		t.Fatalf("GET %s through the gateway = %d, want %d", path, res.StatusCode, want)
	}
}

// ShopDecisions has a new visitor ask in's forward auth about an
// unprotected request (allowed) and a protected one without a pass
// (no_pass), and returns the visitor.
func ShopDecisions(t *testing.T, in *Instance) *http.Client {
	t.Helper()
	c := Visitor(t)
	if code, _, _ := Ask(t, in, c, false, "GET", "/public"); code != 200 {
		t.Fatalf("unprotected decision = %d, want 200", code)
	}
	if code, _, _ := Ask(t, in, c, false, "POST", "/api/orders"); code != 403 {
		t.Fatalf("protected decision without a pass = %d, want 403", code)
	}
	return c
}
