package browser

// A shop's first try at gateway mode, in headless Chromium: the demo shop
// (deploy/origin) served by a real nginx as the origin, its /checkout/
// protected, visited the way a shopper does.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"waitingroom/cmd/waitingroom/systemtest"
)

// nginxOrigin is nginx serving a directory, logging every request it
// gets: method, URI, status and the pass it came with.
type nginxOrigin struct {
	addr string // host:port
	log  string // the access log's path
}

// startNginxOrigin serves dir with nginx on a free port until the test
// ends (run as the forward-auth proxies are: RunProxy).
func startNginxOrigin(t *testing.T, dir string) *nginxOrigin {
	t.Helper()
	nginx := systemtest.FrontProxies[0]
	bin := systemtest.ProxyBinary(t, nginx)
	root, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	prefix, addr := systemtest.PrefixDir(t, "origin"), systemtest.FreePort(t)
	o := &nginxOrigin{addr: addr, log: filepath.Join(prefix, "access.log")}
	conf := fmt.Sprintf(`pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 256; }
http {
	client_body_temp_path %[1]s/body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	types { text/html html; text/css css; image/svg+xml svg; application/javascript js; application/json json; }
	log_format origin '$request_method $request_uri $status pass=$http_waitingroom_pass';
	access_log %[2]s origin;
	server {
		listen %[3]s;
		root %[4]s;
	}
}
`, prefix, o.log, addr, root)
	if err := os.WriteFile(filepath.Join(prefix, nginx.Conf), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := systemtest.RunProxy(t, nginx, bin, prefix, addr); err != nil {
		t.Fatalf("nginx (the origin) did not start: %v\n%s", err, out)
	}
	return o
}

// requests are the origin's access log: method, URI, status and
// "pass=" with the pass, a request a line.
func (o *nginxOrigin) requests(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile(o.log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out [][]string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(line); len(f) == 4 {
			out = append(out, f)
		}
	}
	return out
}

// waitAcross waits until expr is true in the tab, asking again and again
// from here: the tab navigates meanwhile (waiting page, redirects, the
// page), which a poll in the page would not survive.
func (p *page) waitAcross(what, expr string) {
	p.t.Helper()
	deadline := time.Now().Add(pageWait)
	for {
		ctx, cancel := context.WithTimeout(p.ctx, 2*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("waiting for %s (%s): %v\n%s", what, expr, err, p.state())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPageGatewayShopPage: a shopper opens /checkout (no slash), waits
// their turn, and comes back to a whole page: nginx's absolute redirect
// to /checkout/ stays on the gateway, and the page's stylesheet, logo,
// script and cart (an XHR) load with the visit its first request opened.
// nginx, the judge, logged a pass with every request under /checkout.
func TestPageGatewayShopPage(t *testing.T) {
	systemtest.Parallel(t)
	b := newBrowser(t)
	o := startNginxOrigin(t, "../../../../deploy/origin")
	in := systemtest.NewRedisOnlyEnv(t).Start(map[string]string{"WR_UPSTREAM": "http://" + o.addr, "WR_PROTECT": "GET /checkout/*=sale",
		"WR_ROOMS": "sale", "WR_DEV": "1", "WR_GATEWAY_CHALLENGE": "off", "WR_ADMIT_INTERVAL": "20ms"})
	p := b.tab(in)
	p.open("/checkout")
	p.waitAcross("the checkout page's cart", `location.pathname === '/checkout/' && document.getElementById('cart') !== null &&
		document.getElementById('cart').textContent.startsWith('Your cart: 2 items')`)
	if got := eval[string](p, `getComputedStyle(document.querySelector('h1')).color`); got != "rgb(0, 90, 60)" {
		t.Errorf("the stylesheet did not apply: h1's color is %q", got)
	}
	if got := eval[int](p, `document.getElementById('logo').naturalWidth`); got != 48 {
		t.Errorf("the logo did not load: naturalWidth %d", got)
	}
	if got := eval[string](p, `location.host`); got != strings.TrimPrefix(in.Base, "http://") {
		t.Errorf("the tab left the gateway for %s", got)
	}
	var protected []string
	for _, f := range o.requests(t) {
		if strings.HasPrefix(f[1], "/checkout") {
			protected = append(protected, f[0]+" "+f[1]+" "+f[2])
			if f[3] == "pass=" {
				t.Errorf("the origin got %s %s without a pass", f[0], f[1])
			}
		}
	}
	want := []string{"GET /checkout 301", "GET /checkout/ 200", "GET /checkout/style.css 200", "GET /checkout/logo.svg 200",
		"GET /checkout/cart.js 200", "GET /checkout/cart.json 200"}
	for _, w := range want {
		found := false
		for _, got := range protected {
			found = found || got == w
		}
		if !found {
			t.Errorf("the origin never answered %q; it logged %q", w, protected)
		}
	}
	// One refusal: the first navigation, before the queue.
	if got := in.MetricWhere("waitingroom_gateway_requests_total", "kind=protected", "outcome=no_pass"); got != 1 {
		t.Errorf("protected requests refused: %v, want 1 (the first navigation)", got)
	}
}
