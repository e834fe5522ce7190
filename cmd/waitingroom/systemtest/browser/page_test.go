package browser

// End-to-end tests of the waiting-room page (web/) in headless Chromium,
// against a real server with real Redis and Postgres. Other users are driven
// through the API while the browser waits; the page must follow live on each
// transport tier, fall back on its own, resume after a reload, share one
// stream between tabs, and explain every end of a place.
//
// Screenshots of the waiting, READY and ordered states are written to
// $WR_TEST_ARTIFACTS/<test name>/ when that is set (a relative path is taken
// from server/), else to a temporary directory.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"waitingroom/cmd/waitingroom/systemtest"
)

// chromiumPath is Debian's chromium package; `make test` installs it.
const chromiumPath = "/usr/bin/chromium"

// pageWait bounds every wait for a page condition.
const pageWait = 15 * time.Second

// browser is one headless Chromium with a fresh profile.
type browser struct {
	t       *testing.T
	ctx     context.Context // the browser's first tab, kept blank so tabs can close on their own
	started chan error
	stop    func() // closes the browser and waits for it to exit
}

// newBrowser starts Chromium for t, in the background (it takes seconds:
// the test sets up its server meanwhile); it is closed when t ends.
func newBrowser(t *testing.T, extraFlags ...string) *browser {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no browser")
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("browser tests need Chromium at %s (%v): run `make test`, which installs it, or `apt-get install chromium`", chromiumPath, err)
	}
	// Chromium and the server under -race are CPU-bound, and make test runs
	// the long scenarios in parallel beside them: the browsers of every
	// test binary share systemtest.BrowserSlots.
	systemtest.HoldSlot(t, "browser", systemtest.BrowserSlots)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(412, 900),
	}
	for _, f := range extraFlags {
		name, value, ok := strings.Cut(f, "=")
		if ok {
			opts = append(opts, chromedp.Flag(name, value))
		} else {
			opts = append(opts, chromedp.Flag(name, true))
		}
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	b := &browser{t: t, ctx: ctx, started: make(chan error, 1)}
	go func() { b.started <- chromedp.Do(ctx) }()
	b.stop = sync.OnceFunc(func() {
		cancel()
		<-b.started
		cancelAlloc()
	})
	t.Cleanup(b.stop)
	return b
}

// page is one tab on the server in.
type page struct {
	t      *testing.T
	in     *systemtest.Instance
	ctx    context.Context
	close  func()
	mu     sync.Mutex
	issues []string // uncaught exceptions and CSP violations
	logs   []string // every console line, for failure reports
}

// tab opens a new tab. Uncaught exceptions and Content-Security-Policy
// violations in it fail the test.
func (b *browser) tab(in *systemtest.Instance) *page {
	t := b.t
	t.Helper()
	select {
	case err := <-b.started:
		b.started <- err // for the next tab, and the clean-up
		if err != nil {
			t.Fatalf("start %s: %v", chromiumPath, err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("%s did not start within a minute", chromiumPath)
	}
	// The browser must be gone before the server stops: its idle and
	// preconnected sockets would hold the server's shutdown up.
	t.Cleanup(b.stop)
	ctx, cancel := chromedp.NewContext(b.ctx)
	p := &page{t: t, in: in, ctx: ctx}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(412, 900)); err != nil {
		t.Fatalf("open tab: %v", err)
	}
	msgs := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			p.mu.Lock()
			line := fmt.Sprintf("%s %s [%s] %s", m.Time.Format("15:04:05.000"), m.Type, m.Source, m.Text)
			if m.URL != "" {
				line += " (" + m.URL + ")"
			}
			p.logs = append(p.logs, line)
			if m.IsException() || m.Source == "security" || strings.Contains(m.Text, "Content Security Policy") {
				p.issues = append(p.issues, m.String())
			}
			p.mu.Unlock()
		}
	}()
	p.close = sync.OnceFunc(func() {
		cancel()
		<-done
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, s := range p.issues {
			t.Errorf("page error: %s", s)
		}
	})
	t.Cleanup(p.close)
	return p
}

// do runs actions in the tab.
func (p *page) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, pageWait)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.t.Fatalf("%s: %v\n%s", what, err, p.state())
	}
}

func (p *page) open(path string) {
	p.t.Helper()
	p.do("open "+path, chromedp.Navigate(p.in.Base+path))
}

// eval returns the value of a JavaScript expression in the page.
func eval[T any](p *page, expr string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, pageWait)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		p.t.Fatalf("eval %s: %v\n%s", expr, err, p.state())
	}
	return v
}

// waitJS waits until expr is truthy in the page.
func (p *page) waitJS(what, expr string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, pageWait+time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingTimeout(pageWait), chromedp.WithPollingInterval(20*time.Millisecond)))
	if err != nil {
		p.t.Fatalf("waiting for %s (%s): %v\n%s", what, expr, err, p.state())
	}
}

// state describes the page for a failure report.
func (p *page) state() string {
	ctx, cancel := context.WithTimeout(p.ctx, 2*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const v = (id) => { const e = document.getElementById(id); return e ? e.textContent.trim() : '-'; };
		const shown = [...document.querySelectorAll('main > section')].filter((e) => !e.hidden).map((e) => e.id);
		return 'url=' + location.href + ' screens=' + shown.join(',') + ' message=' + v('message') +
			' position=' + v('position') + ' tier=' + v('tier') + ' ended=' + v('ended-text') +
			' control=' + v('control-msg') + ' focus=' + (document.activeElement ? document.activeElement.id : '-') +
			' dialog=' + !!(document.querySelector('dialog[open]'));
	})()`))
	if err != nil {
		s = "(page state unavailable: " + err.Error() + ")"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return "page: " + s + "\nconsole:\n  " + strings.Join(p.logs, "\n  ")
}

func shown(id string) string { return fmt.Sprintf(`!document.getElementById(%q).hidden`, id) }

func textOf(id string) string { return fmt.Sprintf(`document.getElementById(%q).textContent`, id) }

func (p *page) text(id string) string { p.t.Helper(); return eval[string](p, textOf(id)) }

// waitPosition waits until the page shows the queue at position n.
func (p *page) waitPosition(n int) {
	p.t.Helper()
	p.waitJS(fmt.Sprintf("position %d", n), shown("queue")+" && "+textOf("position")+fmt.Sprintf(" === 'You are #%d'", n))
}

// signIn signs user in through the form and waits for the enter screen.
func (p *page) signIn(user string) {
	p.t.Helper()
	p.waitJS("the sign-in form", shown("login"))
	p.do("sign in",
		chromedp.SendKeys(chromedp.CSS("#login-id"), user),
		chromedp.SendKeys(chromedp.CSS("#password"), systemtest.TestPassword),
		chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)),
	)
	p.waitJS("the enter screen", shown("enter"))
}

func (p *page) click(sel string) {
	p.t.Helper()
	p.do("click "+sel, chromedp.Click(chromedp.CSS(sel)))
}

// shot writes a PNG of the page's content to the test's artifact directory.
func (p *page) shot(name string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, pageWait)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS("body"))) // the content, not the empty viewport below
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
	file := filepath.Join(artifactDir(p.t), name+".png")
	if err := os.WriteFile(file, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot: %s", file)
}

var artifactDirs sync.Map // *testing.T → directory

func artifactDir(t *testing.T) string {
	t.Helper()
	if d, ok := artifactDirs.Load(t); ok {
		return d.(string)
	}
	t.Cleanup(func() { artifactDirs.Delete(t) })
	d := t.TempDir()
	if root := os.Getenv("WR_TEST_ARTIFACTS"); root != "" {
		d = filepath.Join(root, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	artifactDirs.Store(t, d)
	return d
}

// noTokenInURL checks that the page never put a token in its address.
func (p *page) noTokenInURL() {
	p.t.Helper()
	if u := eval[string](p, `location.href`); strings.Contains(strings.ToLower(u), "token") {
		p.t.Fatalf("a token in the page's URL: %s", u)
	}
}

// pageEnv is the server the page tests use: admission every 50 ms, nobody
// admitted until the test raises targetActive, fast polls near the front.
func pageEnv(t *testing.T, vars map[string]string) (*systemtest.Env, *systemtest.Instance) {
	t.Helper()
	e := systemtest.NewEnv(t)
	all := map[string]string{"WR_ADMIT_INTERVAL": "50ms", "WR_TARGET_ACTIVE": "0", "WR_POLL_BANDS": "100:250ms,*:5s", "WR_DB_POOL": "4"}
	for k, v := range vars {
		all[k] = v
	}
	return e, e.Start(all)
}

// etaRe matches the ETA as the page words it: an estimate (a rounded
// duration and the clock time), "estimating…" while the admission rate is
// unmeasured, or not known.
var etaRe = regexp.MustCompile(`^(estimating…|not known yet|less than a minute|about \d+ (min|hr) — around \d{1,2}:\d\d([\s\x{202f}][AP]M)?)$`)

// TestPageWaitsLiveAndOrders: sign in, enter, watch the position fall as the
// users ahead are admitted and order, become READY, order — on each tier.
func TestPageWaitsLiveAndOrders(t *testing.T) {
	systemtest.Parallel(t)
	for _, tier := range []string{"sse", "ws", "poll"} {
		t.Run(tier, func(t *testing.T) {
			systemtest.Parallel(t)
			b := newBrowser(t)
			_, in := pageEnv(t, nil)
			var ahead []string
			for i := 1; i <= 3; i++ {
				ahead = append(ahead, in.Enter(systemtest.User(i), "default").Str("queueToken"))
			}
			p := b.tab(in)
			p.open("/?room=default&transport=" + tier)
			p.signIn(systemtest.User(4))
			p.click("#enter-btn")
			p.waitPosition(4)
			p.waitJS("tier "+tier, fmt.Sprintf(`document.getElementById('tier').dataset.tier === %q`, tier))
			if got := p.text("ahead"); got != "3 people ahead of you" {
				t.Errorf("ahead = %q", got)
			}
			if got := p.text("eta"); !etaRe.MatchString(got) {
				t.Errorf("eta = %q, want an estimate", got)
			}
			want := map[string]float64{"sse": 0, "ws": 0}
			if tier != "poll" {
				want[tier] = 1
			}
			systemtest.WaitFor(t, fmt.Sprintf("streams open = %v", want), func() bool {
				return in.StreamsOpen("sse") == want["sse"] && in.StreamsOpen("ws") == want["ws"]
			})

			// The users ahead are admitted and order one by one; the page
			// follows without a reload.
			in.SetTarget("default", 1)
			for i, qt := range ahead {
				p.waitPosition(3 - i)
				if i == 1 {
					if got := p.text("eta"); !etaRe.MatchString(got) {
						t.Errorf("eta at #2 = %q, want an estimate", got)
					}
					if v := eval[float64](p, `document.getElementById('progress').value`); v < 0.6 || v > 0.7 {
						t.Errorf("progress at #2 of 4 = %v, want 2/3", v)
					}
					p.shot("page-waiting")
				}
				in.OrderWhenReady("default", qt)
			}

			p.waitJS("READY", shown("ready"))
			p.waitJS("the products", `document.querySelectorAll('#product-list input').length === 3 && !document.getElementById('order-btn').disabled`)
			if got := p.text("countdown"); !regexp.MustCompile(`^\d+:\d\d left to order$`).MatchString(got) {
				t.Errorf("countdown = %q", got)
			}
			p.do("choose 2", chromedp.SetValue(chromedp.CSS("#quantity"), "2"))
			p.shot("page-ready")
			p.click("#order-btn")
			p.waitJS("the order", shown("order-result"))
			if got := p.text("done-id") + " " + p.text("done-qty") + " × " + p.text("done-product"); !regexp.MustCompile(`^\d+ 2 × .+$`).MatchString(got) {
				t.Errorf("confirmation = %q", got)
			}
			p.shot("page-ordered")
			if r := systemtest.Do(t, "GET", in.Base+"/api/v1/products/1", "", nil); r.Num("stock") != 1000-3-2 {
				t.Errorf("stock of product 1 = %s, want 995 (3 API orders of 1, the page's of 2)", r.Raw)
			}
			p.noTokenInURL()
		})
	}
}

// TestPageFallsBackOnItsOwn: with SSE (or every push transport) switched
// off by the server, the page finds the next tier itself and reaches READY.
func TestPageFallsBackOnItsOwn(t *testing.T) {
	systemtest.Parallel(t)
	for _, c := range []struct{ transports, want string }{{"ws", "ws"}, {"none", "poll"}} {
		t.Run("WR_TRANSPORTS="+c.transports, func(t *testing.T) {
			systemtest.Parallel(t)
			b := newBrowser(t)
			_, in := pageEnv(t, map[string]string{"WR_TRANSPORTS": c.transports})
			first := in.Enter(systemtest.User(1), "default").Str("queueToken")
			p := b.tab(in)
			p.open("/rooms/default")
			p.signIn(systemtest.User(2))
			p.click("#enter-btn")
			p.waitJS("tier "+c.want, fmt.Sprintf(`document.getElementById('tier').dataset.tier === %q`, c.want))
			p.waitPosition(2)
			in.SetTarget("default", 1)
			p.waitPosition(1)
			in.OrderWhenReady("default", first)
			p.waitJS("READY", shown("ready"))
			if got := in.StreamsOpen("sse"); got != 0 {
				t.Errorf("SSE streams open = %v with SSE off", got)
			}
		})
	}
}

// TestPageResumesAndSharesOneStream: a reload keeps the place and the time
// waited; a second tab follows the first one's stream (one connection per
// browser), and takes it over when the first tab closes.
func TestPageResumesAndSharesOneStream(t *testing.T) {
	systemtest.Parallel(t)
	b := newBrowser(t)
	_, in := pageEnv(t, nil)
	in.Enter(systemtest.User(1), "default")
	in.Enter(systemtest.User(2), "default")
	p := b.tab(in)
	p.open("/?room=default")
	p.signIn(systemtest.User(3))
	p.click("#enter-btn")
	p.waitPosition(3)
	p.waitJS("a second of waiting", textOf("elapsed")+" !== '0:00'")
	p.do("reload", chromedp.Reload())
	p.waitPosition(3)
	if got := p.text("elapsed"); got == "0:00" {
		t.Errorf("time waiting restarted at the reload")
	}
	p.waitJS("the leader's stream", `document.getElementById('tier').dataset.role === 'leader'`)

	second := b.tab(in)
	second.open("/?room=default")
	second.waitPosition(3)
	second.waitJS("following the first tab", `document.getElementById('tier').dataset.role === 'follower'`)
	if got := second.text("tier"); got != "Live updates, through your other tab" {
		t.Errorf("second tab's tier = %q", got)
	}
	systemtest.WaitFor(t, "one stream for two tabs", func() bool { return in.StreamsOpen("") == 1 })

	in.SetTarget("default", 1)
	p.waitPosition(2)
	second.waitPosition(2)
	p.noTokenInURL()

	p.close() // the second tab takes the stream over
	second.waitJS("the second tab leading", `document.getElementById('tier').dataset.role === 'leader'`)
	systemtest.WaitFor(t, "the second tab's own stream", func() bool { return in.StreamsOpen("") == 1 })
	in.SetTarget("default", 3)
	second.waitJS("READY in the second tab", shown("ready"))
}

// TestPageShowsTheWayBack: every end of a place says what happened and
// offers to enter again.
func TestPageShowsTheWayBack(t *testing.T) {
	systemtest.Parallel(t)
	t.Run("entry window over", func(t *testing.T) {
		systemtest.Parallel(t)
		b := newBrowser(t)
		_, in := pageEnv(t, map[string]string{"WR_TARGET_ACTIVE": "1", "WR_ENTRY_TTL": "2s"})
		p := b.tab(in)
		p.open("/?room=default")
		p.signIn(systemtest.User(1))
		p.click("#enter-btn")
		p.waitJS("READY", shown("ready"))
		p.waitJS("the window's end", shown("ended"))
		if got := p.text("ended-text"); !strings.Contains(got, "Your turn ended") {
			t.Errorf("ended = %q", got)
		}
		p.click("#reenter-btn")
		p.waitJS("READY again", shown("ready"))
	})
	t.Run("place gone", func(t *testing.T) {
		systemtest.Parallel(t)
		b := newBrowser(t)
		_, in := pageEnv(t, nil)
		in.Enter(systemtest.User(1), "default")
		p := b.tab(in)
		p.open("/?room=default")
		p.signIn(systemtest.User(2))
		p.click("#enter-btn")
		p.waitPosition(2)
		// The same user leaves elsewhere (another device): the stream says gone.
		qt := in.Enter(systemtest.User(2), "default").Str("queueToken")
		if r := systemtest.Do(t, "POST", in.Base+"/api/v1/rooms/default/leave", qt, nil); r.Status != 204 {
			t.Fatalf("leave: %d %s", r.Status, r.Raw)
		}
		p.waitJS("the expired place", shown("ended"))
		if got := p.text("ended-text"); !strings.Contains(got, "Your place expired") {
			t.Errorf("ended = %q", got)
		}
		p.click("#reenter-btn")
		p.waitPosition(2)
	})
	t.Run("sold out", func(t *testing.T) {
		systemtest.Parallel(t)
		b := newBrowser(t)
		e, in := pageEnv(t, map[string]string{"WR_TARGET_ACTIVE": "1"})
		p := b.tab(in)
		p.open("/?room=default")
		p.signIn(systemtest.User(1))
		p.click("#enter-btn")
		p.waitJS("READY with products", shown("ready")+` && document.querySelectorAll('#product-list input').length === 3`)
		e.Exec("UPDATE products SET stock = 0")
		p.click("#order-btn")
		p.waitJS("sold out", shown("ended"))
		if got := p.text("ended-text"); !strings.Contains(got, "sold out") {
			t.Errorf("ended = %q", got)
		}
		if !eval[bool](p, shown("ended")+` && !document.getElementById('reenter-btn').hidden`) {
			t.Error("no way back after sold out")
		}
	})
}

// TestPageSpeaksKorean: the browser's language chooses Korean; the switch
// changes it in place.
func TestPageSpeaksKorean(t *testing.T) {
	systemtest.Parallel(t)
	b := newBrowser(t, "lang=ko-KR", "accept-lang=ko-KR,ko")
	_, in := pageEnv(t, nil)
	p := b.tab(in)
	p.open("/")
	p.waitJS("Korean", shown("login")+` && document.documentElement.lang === 'ko'`)
	if got := p.text("login-h"); got != "로그인" {
		t.Errorf("heading = %q, want 로그인", got)
	}
	p.click(`button.lang[data-lang="en"]`)
	p.waitJS("English", textOf("login-h")+` === 'Sign in'`)
}

// TestPageSecurityHeaders: the page and its assets carry a CSP without
// inline script, nosniff and no-referrer.
func TestPageSecurityHeaders(t *testing.T) {
	systemtest.Parallel(t)
	_, in := pageEnv(t, nil)
	for _, path := range []string{"/", "/rooms/default", "/static/app.js", "/static/style.css"} {
		r := systemtest.Do(t, "GET", in.Base+path, "", nil)
		if r.Status != 200 {
			t.Fatalf("GET %s = %d", path, r.Status)
		}
		csp := r.Header.Get("Content-Security-Policy")
		for _, want := range []string{"script-src 'self'", "default-src 'self'", "connect-src 'self'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: CSP %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("GET %s: CSP %q allows inline code", path, csp)
		}
		if got := r.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options = %q", path, got)
		}
		if got := r.Header.Get("Referrer-Policy"); got != "no-referrer" {
			t.Errorf("GET %s: Referrer-Policy = %q", path, got)
		}
	}
}

// TestPageScheduledSaleAndClosed: before the opening the page shows a
// countdown and the arrival-order place (EN and KO); at the opening it
// moves to the queue by itself; when the room turns to reject it shows the
// closed screen and keeps the place; entering it anew shows the closed
// screen without a place.
func TestPageScheduledSaleAndClosed(t *testing.T) {
	systemtest.Parallel(t)
	b := newBrowser(t)
	_, in := pageEnv(t, nil)
	opens := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if r := in.PutRoom("default", map[string]any{"method": "fifo", "opensAt": opens}); r.Status != 200 {
		t.Fatalf("PUT schedule = %d %s", r.Status, r.Raw)
	}
	in.Enter(systemtest.User(1), "default")
	in.Enter(systemtest.User(2), "default")
	p := b.tab(in)
	p.open("/?room=default")
	p.signIn(systemtest.User(3))
	p.click("#enter-btn")
	p.waitJS("the countdown", shown("prequeue")+` && /^Opens in (\d+:)?\d+:\d\d$/.test(`+textOf("opens-in")+`)`)
	if got := p.text("pre-place"); got != "Your place in line: #3" {
		t.Errorf("pre-queue place = %q", got)
	}
	if got := p.text("opens-at"); !strings.HasPrefix(got, "Opening at ") {
		t.Errorf("opening time = %q", got)
	}
	p.click(`button.lang[data-lang="ko"]`)
	p.waitJS("the Korean countdown", `/^(\d+:)?\d+:\d\d 후 시작$/.test(`+textOf("opens-in")+`)`)
	p.click(`button.lang[data-lang="en"]`)
	p.shot("page-prequeue")

	// The opening is brought forward to now: the admission loop opens the
	// room and the page follows into the queue without a reload.
	in.PutRoom("default", map[string]any{"opensAt": nil})
	p.waitPosition(3)

	in.PutRoom("default", map[string]any{"method": "reject"})
	p.waitJS("the closed screen", shown("closed")+` && `+textOf("closed-kept")+` === 'You keep your place (#3) in case it reopens; this page updates by itself.'`)
	p.shot("page-closed")

	// Leaving the closed room gives up the place; entering again is refused
	// with the closed screen, now without a place.
	p.click("#leave-btn")
	p.click("#leave-yes")
	p.waitJS("the enter screen", shown("enter"))
	p.click("#enter-btn")
	p.waitJS("the closed screen for a newcomer", shown("closed")+` && document.getElementById('closed-kept').hidden`)
	if got := p.text("closed-h"); got != "This sale is closed" {
		t.Errorf("closed heading = %q", got)
	}
}

// TestPageRedisOutage: Redis dies while the page waits on a stream. The
// page keeps the place on screen and says the queue service is briefly
// unreachable; when Redis is back (from its AOF) the notice goes and the
// queue moves again.
func TestPageRedisOutage(t *testing.T) {
	systemtest.Parallel(t)
	// The browser first, as the other tests take it: user1 enters through
	// the API and never polls, so it is present for its grace only
	// (presence-aware admission), which a wait for a browser slot between
	// its enter and the admission below could outlast; it would then be
	// passed over and user2 admitted instead of moved to #1.
	b := newBrowser(t)
	e, rp := systemtest.OwnRedisEnv(t)
	in := e.Start(map[string]string{"WR_ADMIT_INTERVAL": "50ms", "WR_TARGET_ACTIVE": "0"})
	in.Enter(systemtest.User(1), "default")
	p := b.tab(in)
	p.open("/?room=default&transport=sse")
	p.signIn(systemtest.User(2))
	p.click("#enter-btn")
	p.waitPosition(2)

	systemtest.WaitFor(t, "the page's stream", func() bool { return in.StreamsOpen("sse") == 1 })

	rp.Kill()
	p.waitJS("the outage notice", textOf("message")+".includes('briefly unreachable')")
	p.waitPosition(2) // the place stays on screen
	p.shot("page-redis-outage")

	systemtest.StartRedis(t, rp.Dir, rp.Port)
	p.waitJS("the notice to go", "!"+textOf("message")+".includes('briefly unreachable')")
	in.SetTarget("default", 1)
	p.waitPosition(1)
}
