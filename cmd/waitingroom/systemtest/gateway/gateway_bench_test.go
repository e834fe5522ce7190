package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/pass"
)

// BenchmarkGateway measures what the gateway adds, over real loopback
// sockets, in one run: the origin called directly; an unprotected path
// through the gateway (no Redis call); a protected path with a valid
// session pass (one Redis script to hold the session, one Ed25519
// signature). Compare their ns/op (the ratio is the overhead); the
// origin is a minimal net/http handler, so the ratio is the worst case.
func BenchmarkGateway(b *testing.B) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer origin.Close()
	e := systemtest.NewEnv(b)
	in := e.Start(map[string]string{"WR_UPSTREAM": origin.URL, "WR_PROTECT": "GET /checkout/*=sale",
		"WR_PASS_KEY": pass.GenerateKey(), "WR_ROOMS": "sale", "WR_ADMIT_INTERVAL": "20ms"})
	r := systemtest.Do(b, "PUT", in.Admin+"/admin/rooms/sale", systemtest.TestAdminToken, map[string]any{"gateway": map[string]any{"pass": "session"}})
	if r.Status != 200 {
		b.Fatalf("session mode: %d %s", r.Status, r.Raw)
	}
	session := visitorBench(b, in)
	for _, c := range []struct {
		name, url string
		client    *http.Client
	}{
		{"origin-direct", origin.URL + "/checkout/x", benchClient(nil)},
		{"gateway-unprotected", in.Base + "/public/x", benchClient(nil)},
		{"gateway-protected-session", in.Base + "/checkout/x", session},
	} {
		b.Run(c.name, func(b *testing.B) { benchGet(b, c.client, c.url) })
	}
}

// benchClient keeps enough idle connections for b.RunParallel.
func benchClient(jar http.CookieJar) *http.Client {
	return &http.Client{Jar: jar, Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
}

// visitorBench is a visitor admitted to "sale" whose first protected
// request opened a session: its client carries the session cookie.
func visitorBench(b *testing.B, in *systemtest.Instance) *http.Client {
	c := systemtest.Visitor(b)
	admitted(b, in, c, "sale")
	if code, _, m := systemtest.Call(b, c, "GET", in.Base+"/checkout/open", ""); code != 200 {
		b.Fatalf("opening the session: %d %v", code, m)
	}
	return benchClient(c.Jar)
}

func benchGet(b *testing.B, c *http.Client, url string) {
	b.ReportAllocs()
	start := systemtest.CPUTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := c.Get(url)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != 200 {
				b.Errorf("%s: %d", url, res.StatusCode)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((systemtest.CPUTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
