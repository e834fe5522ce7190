package browser

// End-to-end tests of the dashboard's shop panel in headless Chromium:
// in gateway mode it shows the origin's answers and turns to failing
// within 10 s of the origin's first 5xx; in forward auth it shows the
// decisions and says the origin's answers are not visible; outside both
// it stays hidden.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"waitingroom/cmd/waitingroom/systemtest"
)

// shopState is a JS condition: the shop panel is shown in state s.
func shopState(s string) string {
	return shown("shop") + ` && document.getElementById('shop').dataset.state === '` + s + `'`
}

// waitJSWithin waits until expr is truthy in the page, at most d.
func (p *page) waitJSWithin(what, expr string, d time.Duration) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, d+time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingTimeout(d), chromedp.WithPollingInterval(20*time.Millisecond)))
	if err != nil {
		p.t.Fatalf("%s not within %s (%s): %v\n%s", what, d, expr, err, p.state())
	}
}

// shotOf writes a PNG of the element with id to the test's artifact
// directory.
func (p *page) shotOf(name, id string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, pageWait)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS("#"+id)))
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
	file := filepath.Join(artifactDir(p.t), name+".png")
	if err := os.WriteFile(file, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot: %s", file)
}

// TestDashboardShopFailing: behind a gateway the panel shows the origin
// healthy with its answers, and failing — the panel, its state line and
// the 5xx count — within 10 s of the origin's first 500.
func TestDashboardShopFailing(t *testing.T) {
	systemtest.Parallel(t)
	b := newBrowser(t)
	o := systemtest.StartFailingOrigin(t)
	in := systemtest.ShopGateway(t, o)
	p := openDashboard(t, b, in, in.Admin)
	p.giveToken(systemtest.TestAdminToken)
	p.waitLive()
	p.waitJS("the shop, before any request", shopState("healthy")+` && `+textOf("o-latency")+` === 'no answer yet'`)
	for range 3 {
		systemtest.Through(t, in, "/public", 200)
	}
	systemtest.Through(t, in, "/checkout/cart", 403)
	p.waitJS("the shop healthy with three 2xx", shopState("healthy")+` && `+textOf("o-2xx")+`.startsWith('3') && `+
		textOf("d-no-pass")+`.startsWith('1') && `+textOf("o-check")+` === 'ok' && `+shown("shop-origin")+` && !`+shown("shop-blind"))
	p.waitJS("the latency of the last minute's answers", `/^[0-9.]+ ms \/ [0-9.]+ ms \(last minute, 3 answers\)$/.test(`+textOf("o-latency")+`)`)
	p.shotOf("dashboard-shop-healthy", "shop")

	o.Fail.Store(true)
	systemtest.Through(t, in, "/public", 500)
	// The bar: failing on screen within 10 s of the first 5xx.
	p.waitJSWithin("the shop failing", shopState("failing")+` && `+textOf("shop-state")+`.startsWith('Failing: ')`, 10*time.Second)
	systemtest.Through(t, in, "/cut", 502)
	p.waitJS("the failures counted", textOf("o-5xx")+`.startsWith('1') && `+textOf("o-bad-gateway")+`.startsWith('1') && `+
		`document.getElementById('o-5xx').classList.contains('alert') && `+textOf("o-check")+`.startsWith('errors')`)
	if got := p.text("shop-state"); !strings.Contains(got, "5xx answer") || !strings.Contains(got, "origin check says errors") {
		t.Errorf("the failing state says %q, want the 5xx and the origin check named", got)
	}
	p.shotOf("dashboard-shop-failing", "shop")
}

// TestDashboardShopForwardAuth: in forward auth the panel shows the
// decisions and says the origin's answers are not visible there.
func TestDashboardShopForwardAuth(t *testing.T) {
	systemtest.Parallel(t)
	b := newBrowser(t)
	in := systemtest.ForwardAuthInstance(t, nil)
	systemtest.ShopDecisions(t, in)
	p := openDashboard(t, b, in, in.Admin)
	p.giveToken(systemtest.TestAdminToken)
	p.waitLive()
	p.waitJS("the decisions", shopState("blind")+` && `+shown("shop-blind")+` && !`+shown("shop-origin")+` && `+
		textOf("d-allowed")+`.startsWith('1') && `+textOf("d-no-pass")+`.startsWith('1')`)
	if got := p.text("shop-blind"); !strings.Contains(got, "origin's answers are not visible") {
		t.Errorf("the forward-auth note = %q", got)
	}
}

// TestDashboardShopHidden: outside gateway modes there is no shop panel.
func TestDashboardShopHidden(t *testing.T) {
	systemtest.Parallel(t)
	b := newBrowser(t)
	_, in := pageEnv(t, nil)
	p := openDashboard(t, b, in, in.Admin)
	p.giveToken(systemtest.TestAdminToken)
	p.waitLive()
	p.waitJS("the instance's figures", textOf("i-streams")+` !== '—'`)
	if eval[bool](p, shown("shop")) {
		t.Error("the shop panel is shown outside gateway modes")
	}
}
