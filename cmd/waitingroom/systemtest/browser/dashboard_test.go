package browser

// End-to-end tests of the operator dashboard (web/admin) in headless
// Chromium against a real server with real Redis and Postgres: it asks for
// the admin token, samples the rooms, draws the charts, its controls change
// the room, and it says when the server is unreachable and when it is back.
// Uncaught exceptions and CSP violations fail the tests (see page.tab).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"waitingroom/cmd/waitingroom/systemtest"
)

// openDashboard opens the dashboard at base (a management address) in a
// desktop-sized tab.
func openDashboard(t *testing.T, b *browser, in *systemtest.Instance, base string) *page {
	t.Helper()
	p := b.tab(in)
	p.do("open the dashboard", chromedp.EmulateViewport(1280, 1000), chromedp.Navigate(base+"/admin/"))
	return p
}

// giveToken types token into the dashboard's token form.
func (p *page) giveToken(token string) {
	p.t.Helper()
	p.waitJS("the token form", shown("auth"))
	p.do("give the token",
		chromedp.SendKeys(chromedp.CSS("#token-input"), token),
		chromedp.Click(chromedp.CSS(`#token-form button[type="submit"]`)),
	)
}

func (p *page) waitLive() {
	p.t.Helper()
	p.waitJS("live", `document.getElementById('conn').dataset.state === 'live' && `+shown("dash"))
}

// setField sets a form field as a person would (value, then input and
// change events).
func (p *page) setField(id, value string) {
	p.t.Helper()
	p.do("set "+id, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const e = document.getElementById(%q);
		e.value = %q;
		e.dispatchEvent(new Event('input', {bubbles: true}));
		e.dispatchEvent(new Event('change', {bubbles: true}));
	})()`, id, value)))
}

// chartPoints is the number of values a chart drew.
func chartPoints(id string) string {
	return fmt.Sprintf(`Number(document.getElementById(%q).dataset.points)`, id)
}

// TestDashboardLiveAndControls: the operator gives the token, sees the room
// live, and changes targetActive and paused through the controls; a value
// the server refuses shows the server's message.
func TestDashboardLiveAndControls(t *testing.T) {
	systemtest.Parallel(t)
	b := newBrowser(t)
	_, in := pageEnv(t, nil)
	for i := 1; i <= 5; i++ {
		in.Enter(systemtest.User(i), "default")
	}
	p := openDashboard(t, b, in, in.Admin)
	p.giveToken(systemtest.TestAdminToken)
	p.waitLive()
	p.waitJS("the default room", textOf("room-name")+` === 'default' && `+textOf("s-waiting")+` === '5'`)
	if got := p.text("s-active"); got != "0 / 0" {
		t.Errorf("active / limit = %q, want 0 / 0", got)
	}

	// Controls of fields this server does not report stay hidden.
	doc := in.AdminRoom("default").Body
	for form, field := range map[string]string{"mode-form": "mode", "method-form": "method", "schedule-form": "opensAt"} {
		_, has := doc[field]
		if hidden := eval[bool](p, fmt.Sprintf(`document.getElementById(%q).hidden`, form)); hidden == has {
			t.Errorf("#%s hidden = %v, but the room doc has %s: %v", form, hidden, field, has)
		}
	}

	// targetActive through the control.
	p.do("set the limit to 2",
		chromedp.SetValue(chromedp.CSS("#target-input"), ""),
		chromedp.SendKeys(chromedp.CSS("#target-input"), "2"),
		chromedp.Click(chromedp.CSS(`#target-form button[type="submit"]`)),
	)
	systemtest.WaitFor(t, "targetActive 2", func() bool { return in.AdminRoom("default").Num("targetActive") == 2 })
	p.waitJS("saved", textOf("control-msg")+`.startsWith('Saved default: targetActive = 2')`)
	p.waitJS("two admitted", textOf("s-active")+` === '2 / 2' && `+textOf("s-waiting")+` === '3'`)
	p.waitJS("charts with samples", chartPoints("chart-waiting")+` >= 3 && `+chartPoints("chart-active")+` >= 6 && `+chartPoints("chart-admitted")+` >= 2`)
	if d := eval[string](p, `document.querySelector('#chart-active path.line.s2').getAttribute('d')`); !strings.HasPrefix(d, "M") {
		t.Errorf("limit line d = %q", d)
	}
	p.setField("window-select", "60")
	p.waitJS("a one-minute window", textOf("charts-h")+` === 'Last minute' && document.querySelector('#chart-waiting text.xlabel.start').textContent === '−1 min'`)

	// A value the server refuses: its message is shown, nothing changes.
	p.do("set the limit too high",
		chromedp.SetValue(chromedp.CSS("#target-input"), ""),
		chromedp.SendKeys(chromedp.CSS("#target-input"), "2000000"),
		chromedp.Click(chromedp.CSS(`#target-form button[type="submit"]`)),
	)
	p.waitJS("the server's message", `document.getElementById('control-msg').classList.contains('error') && `+
		textOf("control-msg")+`.includes('targetActive must be from 0 to 1000000')`)
	if got := in.AdminRoom("default").Num("targetActive"); got != 2 {
		t.Errorf("targetActive = %d after a refused change, want 2", got)
	}

	// Pause with a click (and a confirmation), resume with the keyboard.
	p.click("#pause-btn")
	p.waitJS("the confirmation", `document.getElementById('confirm').open`)
	p.click("#confirm-ok")
	systemtest.WaitFor(t, "paused", func() bool { return in.AdminRoom("default").Body["paused"] == true })
	p.waitJS("paused shown", textOf("pause-state")+` === 'Paused' && `+textOf("pause-btn")+` === 'Resume admission'`)
	p.do("resume by keyboard", chromedp.Focus(chromedp.CSS("#pause-btn")), chromedp.KeyEvent("\r"))
	systemtest.WaitFor(t, "running", func() bool { return in.AdminRoom("default").Body["paused"] == false })
	p.waitJS("running shown", textOf("pause-state")+` === 'Running'`)

	// Create a room, then switch back to the first one from the table.
	p.do("create a room",
		chromedp.SendKeys(chromedp.CSS("#create-input"), "second"),
		chromedp.Click(chromedp.CSS(`#create-form button[type="submit"]`)),
	)
	p.waitJS("the new room selected", textOf("room-name")+` === 'second' && document.querySelectorAll('#rooms-table tbody tr').length === 2`)
	if r := in.AdminRoom("second"); r.Status != 200 {
		t.Errorf("GET the created room: %d %s", r.Status, r.Raw)
	}
	p.click(`#rooms-table button[data-room="default"]`)
	p.waitJS("default selected", textOf("room-name")+` === 'default' && document.getElementById('room-select').value === 'default' && location.hash === '#room=default'`)

	// The token lives in this tab's sessionStorage only; a reload resumes.
	if !eval[bool](p, fmt.Sprintf(`sessionStorage.getItem('wr-admin-token') === %q && localStorage.length === 0 && document.cookie === ''`, systemtest.TestAdminToken)) {
		t.Error("the token is not (only) in sessionStorage")
	}
	p.noTokenInURL()
	p.shot("dashboard")
	p.do("reload", chromedp.Reload())
	p.waitLive()
	if eval[bool](p, shown("auth")) {
		t.Error("the token was asked again after a reload")
	}
}

// TestDashboardWrongToken: a refused token is said so, not kept, and the
// right one is asked for.
func TestDashboardWrongToken(t *testing.T) {
	systemtest.Parallel(t)
	b := newBrowser(t)
	_, in := pageEnv(t, nil)
	p := openDashboard(t, b, in, in.Admin)
	p.giveToken("not-the-token")
	p.waitJS("the refusal", textOf("auth-error")+`.startsWith('The server refused this token')`)
	if !eval[bool](p, `document.getElementById('dash').hidden && sessionStorage.length === 0 && document.getElementById('conn').dataset.state === 'refused'`) {
		t.Error("a refused token shows the dashboard or is kept")
	}
	p.giveToken(systemtest.TestAdminToken)
	p.waitLive()
	p.noTokenInURL()
}

// flakyAdmin is a proxy in front of a management port that can drop every
// connection (the server unreachable) and can stand in for a server that
// reports the fields of adaptive admission and queueing methods.
type flakyAdmin struct {
	t       *testing.T
	srv     *httptest.Server
	down    atomic.Bool
	augment atomic.Bool

	mu    sync.Mutex
	fake  map[string]any // the extra fields, as a newer server reports them
	puts  []string       // PUT bodies that reached the proxy
	gets  int
	proxy *httputil.ReverseProxy
}

func newFlakyAdmin(t *testing.T, admin string) *flakyAdmin {
	t.Helper()
	target, _ := url.Parse(admin)
	transport := &http.Transport{}
	f := &flakyAdmin{t: t, proxy: httputil.NewSingleHostReverseProxy(target)}
	f.proxy.Transport = transport
	f.proxy.ErrorLog = log.New(t.Output(), "dashboard's admin proxy: ", 0) // the test's output, not stderr
	f.fake = map[string]any{
		"mode": "fixed", "minActive": 2, "maxActive": 50,
		"method": "fifo", "opensAt": nil, "preQueue": 7, "shuffleSeed": "5eed",
		"lastChange": map[string]any{"at": "2030-01-01T00:00:00Z", "from": 40, "to": 32, "reason": "p90 above baseline"},
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		f.srv.Close()
		transport.CloseIdleConnections()
	})
	return f
}

func (f *flakyAdmin) serve(w http.ResponseWriter, r *http.Request) {
	if f.down.Load() {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	if !f.augment.Load() || !strings.HasPrefix(r.URL.Path, "/admin/rooms") {
		f.proxy.ServeHTTP(w, r)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Method == http.MethodPut {
		body, _ := io.ReadAll(r.Body)
		f.puts = append(f.puts, string(body))
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		for k, v := range m {
			f.fake[k] = v
		}
	}
	f.gets++
	rec := httptest.NewRecorder()
	req := r.Clone(r.Context())
	req.Method, req.Body, req.ContentLength = http.MethodGet, nil, 0
	f.proxy.ServeHTTP(rec, req)
	var doc map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || rec.Code != 200 {
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
		return
	}
	add := func(room map[string]any) {
		for k, v := range f.fake {
			room[k] = v
		}
		n := float64(f.gets % 5)
		room["signals"] = map[string]any{"windowSeconds": 10, "orders": 100, "errors": n, "errorRate": n / 100,
			"p90Ms": 40 + 10*n, "baselineP90Ms": 45, "poolWaitMs": 1.5, "stale": false}
	}
	if rooms, ok := doc["rooms"].([]any); ok {
		for _, room := range rooms {
			if m, ok := room.(map[string]any); ok {
				add(m)
			}
		}
	} else {
		add(doc)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(doc)
}

func (f *flakyAdmin) lastPut() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.puts) == 0 {
		return ""
	}
	return f.puts[len(f.puts)-1]
}

// TestDashboardUnreachableAndBack: when requests fail the dashboard says the
// server is unreachable, the lines of its own samples break, and it
// recovers on its own; the charts drawn from the server's history are
// filled in, since the server kept recording.
func TestDashboardUnreachableAndBack(t *testing.T) {
	systemtest.Parallel(t)
	b := newBrowser(t)
	_, in := pageEnv(t, nil)
	in.Enter(systemtest.User(1), "default")
	f := newFlakyAdmin(t, in.Admin)
	f.augment.Store(true) // signals: a chart of the tab's own samples
	p := openDashboard(t, b, in, f.srv.URL)
	p.giveToken(systemtest.TestAdminToken)
	p.waitLive()
	p.waitJS("samples", chartPoints("chart-waiting")+` >= 2 && `+chartPoints("chart-latency")+` >= 2`)

	downAt := time.Now().UnixMilli()
	f.down.Store(true)
	p.waitJS("unreachable", `document.getElementById('conn').dataset.state === 'unreachable' && `+textOf("conn")+`.startsWith('Unreachable since')`)
	// The outage lasts until the server's history holds three points the
	// tab missed (an outage of one sample left a margin of one point, which
	// a second the history loop missed on a loaded machine ate).
	systemtest.WaitFor(t, "three points recorded during the outage", func() bool {
		r := systemtest.Do(t, "GET", fmt.Sprintf("%s/admin/rooms/default/history?since=%d", in.Admin, downAt), systemtest.TestAdminToken, nil)
		var doc struct{ Points [][]any }
		return r.Status == 200 && json.Unmarshal([]byte(r.Raw), &doc) == nil && len(doc.Points) >= 3
	})
	f.down.Store(false)
	p.waitLive()
	moves := func(chart string) string {
		return `(document.querySelector('#` + chart + ` path.line').getAttribute('d').match(/M/g) || []).length`
	}
	p.waitJS("a broken line", moves("chart-latency")+` >= 2`)
	// The history holds the seconds the tab missed: more points than the
	// tab's own samples. (Not necessarily one unbroken line: on a loaded
	// machine the history loop itself may miss a second or two.)
	p.waitJS("the history filled in", chartPoints("chart-waiting")+` > `+chartPoints("chart-latency"))
	if got := p.text("conn"); got != "Live" {
		t.Errorf("status after recovery = %q, want Live", got)
	}
}

// TestDashboardNewerFields: against a server that reports adaptive
// admission, queueing methods and schedules, the dashboard shows them and
// its controls send only the changed field.
func TestDashboardNewerFields(t *testing.T) {
	systemtest.Parallel(t)
	b := newBrowser(t)
	_, in := pageEnv(t, nil)
	f := newFlakyAdmin(t, in.Admin)
	f.augment.Store(true)
	p := openDashboard(t, b, in, f.srv.URL)
	p.giveToken(systemtest.TestAdminToken)
	p.waitLive()
	p.waitJS("the newer controls", shown("mode-form")+` && `+shown("method-form")+` && `+shown("schedule-form"))
	p.waitJS("latency and error charts", chartPoints("chart-latency")+` >= 4 && `+chartPoints("chart-errors")+` >= 2`)
	for id, want := range map[string]string{
		"s-mode": "fixed (limit 0)", "s-method": "fifo", "s-prequeue": "7", "s-seed": "5eed",
		"s-opens": "open (no schedule)",
	} {
		if got := p.text(id); got != want {
			t.Errorf("#%s = %q, want %q", id, got, want)
		}
	}
	if got := p.text("s-lastchange"); !strings.HasPrefix(got, "40 → 32") || !strings.HasSuffix(got, ": p90 above baseline") {
		t.Errorf("last change = %q", got)
	}

	send := func(what, want string, steps func()) {
		t.Helper()
		steps()
		systemtest.WaitFor(t, what, func() bool { return f.lastPut() == want })
		// The message may still be the previous save's; the controls are
		// enabled again only when this PUT has been answered (a click on a
		// disabled button would be lost).
		p.waitJS(what+" saved", textOf("control-msg")+`.startsWith('Saved default:') && `+
			`![...document.querySelectorAll('#controls button')].some((b) => b.disabled)`)
	}
	send("mode", `{"mode":"adaptive"}`, func() {
		p.setField("mode-input", "adaptive")
		p.click(`#mode-form button[type="submit"]`)
	})
	send("maxActive", `{"maxActive":80}`, func() {
		p.setField("max-input", "80")
		p.click(`#mode-form button[type="submit"]`)
	})
	send("method", `{"method":"random"}`, func() {
		p.setField("method-input", "random")
		p.click(`#method-form button[type="submit"]`)
	})
	opens := eval[string](p, `new Date('2030-01-02T03:04:05').toISOString().replace(/\.\d{3}Z$/, 'Z')`)
	send("opensAt", fmt.Sprintf(`{"opensAt":%q}`, opens), func() {
		p.setField("opens-input", "2030-01-02T03:04:05")
		p.click(`#schedule-form button[type="submit"]`)
	})
	p.waitJS("the schedule", textOf("opens-help")+`.includes('2030')`)
	send("clear", `{"opensAt":null}`, func() { p.click("#opens-clear") })
	p.waitJS("no schedule", textOf("s-opens")+` === 'open (no schedule)'`)
	p.waitJS("adaptive shown", textOf("s-mode")+` === 'adaptive (2–80)'`)
}

// TestDashboardHeaders: the dashboard's page and assets are served on the
// management port without the token (they hold no data), under a strict
// CSP; the data still needs the token; the public port does not serve them.
func TestDashboardHeaders(t *testing.T) {
	systemtest.Parallel(t)
	_, in := pageEnv(t, nil)
	for path, ct := range map[string]string{
		"/admin/": "text/html", "/admin": "text/html",
		"/admin/static/dashboard.js": "javascript", "/admin/static/dashboard.css": "text/css",
	} {
		r := systemtest.Do(t, "GET", in.Admin+path, "", nil)
		if r.Status != 200 {
			t.Fatalf("GET %s = %d %s", path, r.Status, r.Raw)
		}
		if got := r.Header.Get("Content-Type"); !strings.Contains(got, ct) {
			t.Errorf("GET %s: Content-Type %q, want %s", path, got, ct)
		}
		csp := r.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: CSP %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-") || strings.Contains(csp, "http") {
			t.Errorf("GET %s: CSP %q allows inline code or other origins", path, csp)
		}
		for h, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"} {
			if got := r.Header.Get(h); got != want {
				t.Errorf("GET %s: %s = %q, want %q", path, h, got, want)
			}
		}
		if strings.Contains(r.Raw, systemtest.TestAdminToken) {
			t.Errorf("GET %s contains the admin token", path)
		}
	}
	if r := systemtest.Do(t, "GET", in.Admin+"/admin/", "", nil); !bytes.Contains([]byte(r.Raw), []byte(`src="/admin/static/dashboard.js"`)) {
		t.Errorf("the dashboard page does not load its script: %.200s", r.Raw)
	}
	for _, path := range []string{"/admin/static/index.html", "/admin/static/nope.js", "/admin/static/..%2fadmin.go"} {
		if r := systemtest.Do(t, "GET", in.Admin+path, "", nil); r.Status != 404 {
			t.Errorf("GET %s = %d, want 404", path, r.Status)
		}
	}
	if r := systemtest.Do(t, "GET", in.Admin+"/admin/rooms", "", nil); r.Status != 401 {
		t.Errorf("GET /admin/rooms without the token = %d, want 401", r.Status)
	}
	for _, path := range []string{"/admin/", "/admin", "/admin/static/dashboard.js", "/static/dashboard.js", "/static/admin/dashboard.js"} {
		r := systemtest.Do(t, "GET", in.Base+path, "", nil)
		if r.Status != 404 || strings.Contains(r.Raw, "operator dashboard") {
			t.Errorf("public GET %s = %d %.80s, want 404", path, r.Status, r.Raw)
		}
	}
}
