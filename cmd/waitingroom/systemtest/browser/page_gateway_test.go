package browser

// End-to-end tests of the waiting page in gateway mode, in headless
// Chromium: a protected URL of the origin sends the browser to the page
// under /_wr/, which solves the room's proof of work in a Web Worker,
// queues the visitor anonymously and, at READY, takes it back to the URL it
// came from. The origin is systemtest's (StartOrigin), which answers JSON.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"waitingroom/cmd/waitingroom/systemtest"
)

// Route patterns of the waiting room's own API in gateway mode, as
// waitingroom_http_request_duration_seconds labels them.
const (
	challengeRoute = "/_wr/api/v1/rooms/:room/challenge"
	enterRoute     = "/_wr/api/v1/rooms/:room/enter"
)

// gatewayPageEnv starts an origin and an instance in front of it whose room
// "sale" protects /checkout/* and asks for a proof of work at difficulty 12
// (solved in well under a second), with settings added to the room's.
func gatewayPageEnv(t *testing.T, vars map[string]string, settings map[string]any) *systemtest.Instance {
	t.Helper()
	o := systemtest.StartOrigin(t)
	in := systemtest.GatewayInstance(t, o, vars)
	s := map[string]any{"challenge": "pow", "difficulty": 12}
	for k, v := range settings {
		s[k] = v
	}
	systemtest.SetGateway(t, in, "sale", s)
	return in
}

// waitOrigin waits until the tab shows the origin's answer at path: the
// document's text holds the URI and every one of want. The page gets there
// by a navigation of its own, which a poll in the page would not survive,
// so the location is read again and again from here.
func (p *page) waitOrigin(path string, want ...string) string {
	p.t.Helper()
	deadline := time.Now().Add(pageWait)
	for {
		ctx, cancel := context.WithTimeout(p.ctx, 2*time.Second)
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
			`[location.pathname, document.readyState, document.body ? document.body.innerText : '']`))
		cancel()
		if err == nil && len(got) == 3 && got[0] == path && got[1] == "complete" && containsAll(got[2], append(want, `"uri":"`+path+`"`)...) {
			return got[2]
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("waiting for the origin's %s: %v %q (%v)\n%s", path, got, want, err, p.state())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// watchBack watches the page for the way back, from before it shows: the
// page leaves right after showing it, and a navigation under way holds
// every new command to the page until it ends. The channel gets what the
// screen showed (JSON), or the error.
func (p *page) watchBack() <-chan string {
	p.t.Helper()
	got := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(p.ctx, pageWait+time.Second)
		defer cancel()
		v, err := chromedp.Run(ctx, chromedp.PollFunction[string](`() => {
			window.watchingBack = true;
			const $ = (id) => document.getElementById(id);
			return !$('back').hidden && $('alert').textContent !== '' && JSON.stringify({heading: $('back-h').textContent,
				alert: $('alert').textContent, href: $('back-link').getAttribute('href'), tabIndex: $('back-link').tabIndex});
		}`, chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(pageWait)))
		if err != nil {
			v = "error: " + err.Error()
		}
		got <- v
	}()
	p.waitJS("the watch on the way back", `window.watchingBack === true`)
	return got
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestPageGatewayBackToTheSite: a protected URL opened in the browser goes
// to the waiting page, which solves the challenge, enters and, once
// admitted, goes back to that URL, now served by the origin with a pass.
func TestPageGatewayBackToTheSite(t *testing.T) {
	systemtest.Parallel(t)
	t.Run("admitted at once", func(t *testing.T) {
		systemtest.Parallel(t)
		b := newBrowser(t)
		in := gatewayPageEnv(t, nil, nil)
		p := b.tab(in)
		p.open("/checkout/cart")
		p.waitOrigin("/checkout/cart", `"room":"sale"`, `/once"`)
		if n := in.RouteCount(challengeRoute); n != 1 {
			t.Errorf("challenges issued = %v, want 1", n)
		}
		p.noTokenInURL()

		// A return URL off the site, or into the waiting room, goes to "/".
		for _, ret := range []string{"//evil.example/x", "/\\evil.example", "/_wr/rooms/sale", "https://evil.example/"} {
			p.open("/_wr/rooms/sale?return=" + strings.ReplaceAll(ret, "/", "%2F"))
			p.waitOrigin("/", `"room":""`)
		}
	})
	t.Run("after waiting", func(t *testing.T) {
		systemtest.Parallel(t)
		b := newBrowser(t)
		in := gatewayPageEnv(t, map[string]string{"WR_TARGET_ACTIVE": "0"}, nil)
		p := b.tab(in)
		p.open("/checkout/cart")
		p.waitPosition(1)
		if got := eval[string](p, `document.getElementById('verify-bar').getAttribute('role') + ' ' + document.getElementById('verify-bar').getAttribute('aria-valuenow')`); got != "progressbar 100" {
			t.Errorf("the challenge's progress bar = %q, want progressbar 100", got)
		}
		if got := eval[string](p, `location.pathname`); got != "/_wr/rooms/sale" {
			t.Errorf("while waiting the tab is at %q", got)
		}

		// A reload keeps the place: no second challenge, no second enter.
		p.do("reload", chromedp.Reload())
		p.waitPosition(1)
		p.waitJS("a live stream", `document.getElementById('tier').dataset.tier === 'sse'`)
		if c, e := in.RouteCount(challengeRoute), in.RouteCount(enterRoute); c != 1 || e != 1 {
			t.Errorf("after a reload: %v challenges and %v enters, want 1 and 1", c, e)
		}

		// Admitted: the way back is shown, announced and offers a link.
		back := p.watchBack()
		in.SetTarget("sale", 5)
		want := `{"heading":"Your turn — taking you back…","alert":"Your turn — taking you back…","href":"/checkout/cart","tabIndex":0}`
		if got := <-back; got != want {
			t.Errorf("the way back showed %s, want %s", got, want)
		}
		p.waitOrigin("/checkout/cart", `"room":"sale"`)
	})
}

// TestPageGatewaySessionPass: in pass mode session, a visitor back on the
// site uses another protected URL in the same tab without queueing again.
func TestPageGatewaySessionPass(t *testing.T) {
	systemtest.Parallel(t)
	b := newBrowser(t)
	in := gatewayPageEnv(t, nil, map[string]any{"pass": "session", "sessionTtl": "1m", "sessionMaxTtl": 3600})
	p := b.tab(in)
	p.open("/checkout/cart")
	p.waitOrigin("/checkout/cart", `"room":"sale"`, `/session"`)
	for i := range 2 {
		path := fmt.Sprintf("/checkout/step%d", i)
		p.open(path)
		p.waitOrigin(path, `"room":"sale"`, `/session"`)
	}
	if c, e := in.RouteCount(challengeRoute), in.RouteCount(enterRoute); c != 1 || e != 1 {
		t.Errorf("%v challenges and %v enters, want 1 and 1: the visitor queued again", c, e)
	}
}

// TestPageGatewayCleanConsole: a visitor's first waiting page logs
// nothing in the console — no 401 from asking for a place nobody holds,
// no 404 for a favicon — and a second tab of the same browser still finds
// the place the first one took.
func TestPageGatewayCleanConsole(t *testing.T) {
	systemtest.Parallel(t)
	b := newBrowser(t)
	in := gatewayPageEnv(t, map[string]string{"WR_TARGET_ACTIVE": "0"}, nil)
	p := b.tab(in)
	p.open("/checkout/cart")
	p.waitPosition(1)
	p.mu.Lock()
	for _, l := range p.logs {
		if strings.Contains(l, " error ") || strings.Contains(l, "[network]") {
			t.Errorf("the console of a clean waiting page: %s", l)
		}
	}
	p.mu.Unlock()
	second := b.tab(in)
	second.open("/_wr/rooms/sale")
	second.waitPosition(1)
	if e := in.RouteCount(enterRoute); e != 1 {
		t.Errorf("%v enters for one place held in two tabs, want 1", e)
	}
}
