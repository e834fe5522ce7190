package pow_test

// The page's solver (web/static/pow-worker.js) in headless Chromium: its
// solutions must be exactly the ones Verify accepts. The worker runs from a
// page served with the page's real Content-Security-Policy.
//
// TestMeasureWorker measures the solve time at DefaultDifficulty; it runs
// only with WR_POW_MEASURE=1:
//
//	WR_POW_MEASURE=1 go test -count=1 -run TestMeasureWorker -v ./server/pow/
//
// (WR_POW_MEASURE_N challenges, default 25; WR_POW_MEASURE_DIFFICULTY to
// measure another difficulty.)

import (
	"context"
	"io/fs"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"waitingroom/server/api"
	"waitingroom/server/pow"
	"waitingroom/web"
)

const chromiumPath = "/usr/bin/chromium"

const harnessHTML = `<!doctype html><meta charset="utf-8"><title>pow</title><script src="/harness.js"></script>`

// harnessJS runs one worker per challenge, as the page would, and reports
// what it posted.
const harnessJS = `'use strict';
window.solve = (token, difficulty) => new Promise((resolve, reject) => {
  const started = performance.now();
  const worker = new Worker('/static/pow-worker.js');
  const progress = [];
  worker.onmessage = (e) => {
    const m = e.data;
    if ('progress' in m) { progress.push(m); return; }
    worker.terminate();
    resolve({ solution: m.solution || '', error: m.error || '', ms: performance.now() - started, progress });
  };
  worker.onerror = (e) => { worker.terminate(); reject(new Error('worker: ' + e.message)); };
  worker.postMessage({ token, difficulty });
});
window.subtleRate = async (token, n) => {
  const enc = new TextEncoder();
  const started = performance.now();
  for (let i = 0; i < n; i += 256) {
    const batch = [];
    for (let j = i; j < i + 256 && j < n; j++) batch.push(crypto.subtle.digest('SHA-256', enc.encode(token + ':' + j)));
    await Promise.all(batch);
  }
  return n / ((performance.now() - started) / 1000);
};
`

// solved is what the harness reports for one challenge.
type solved struct {
	Solution string  `json:"solution"`
	Error    string  `json:"error"`
	Ms       float64 `json:"ms"`
	Progress []struct {
		Progress float64 `json:"progress"`
		Expected float64 `json:"expected"`
	} `json:"progress"`
}

// harness serves the test page and the worker file, under the page's CSP.
func harness(t *testing.T) string {
	t.Helper()
	worker, err := fs.ReadFile(web.FS(), "pow-worker.js")
	if err != nil {
		t.Fatalf("web.FS has no pow-worker.js: %v", err)
	}
	files := map[string][2]string{
		"/":                     {"text/html; charset=utf-8", harnessHTML},
		"/harness.js":           {"text/javascript; charset=utf-8", harnessJS},
		"/static/pow-worker.js": {"text/javascript; charset=utf-8", string(worker)},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Security-Policy", api.PageCSP)
		w.Header().Set("Content-Type", f[0])
		_, _ = w.Write([]byte(f[1]))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// browse opens the harness in a fresh headless Chromium, closed when t
// ends. Exceptions and CSP violations in the page fail the test.
func browse(t *testing.T) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no browser")
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("the worker tests need Chromium at %s (%v): `apt-get install chromium`", chromiumPath, err)
	}
	base := harness(t)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()))
	ctx, cancel := chromedp.NewContext(actx)
	// The first action starts the browser: on ctx itself, whose end closes
	// it, not on a context with a deadline; the console is watched after.
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("start %s: %v", chromiumPath, err)
	}
	var mu sync.Mutex
	var issues []string
	msgs := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.IsException() || m.Source == "security" || strings.Contains(m.Text, "Content Security Policy") {
				mu.Lock()
				issues = append(issues, m.String())
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		cancelAlloc()
		mu.Lock()
		defer mu.Unlock()
		for _, s := range issues {
			t.Errorf("page error: %s", s)
		}
	})
	nctx, ncancel := context.WithTimeout(ctx, time.Minute)
	defer ncancel()
	if err := chromedp.Do(nctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatalf("open the harness: %v", err)
	}
	return ctx
}

// solveInPage runs the worker on one challenge.
func solveInPage(t *testing.T, ctx context.Context, c pow.Challenge, timeout time.Duration) solved {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	expr := "solve(" + strconv.Quote(c.Token) + ", " + strconv.Itoa(c.Difficulty) + ")"
	r, err := chromedp.Run(ctx, chromedp.Evaluate[solved](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	if r.Error != "" || r.Solution == "" {
		t.Fatalf("%s: error %q, solution %q", expr, r.Error, r.Solution)
	}
	return r
}

// TestWorkerSolvesWhatVerifyAccepts: for tokens of every length modulo 64
// (the counter in the first or second block after the fixed head, padding
// in one or two), the worker finds the reference solver's solution and
// Verify accepts it. One larger search checks the progress messages and
// counters of seven digits.
func TestWorkerSolvesWhatVerifyAccepts(t *testing.T) {
	p, _ := newPow(t, time.Minute)
	ctx := browse(t)
	for n := range 64 {
		subject := "v" + strings.Repeat("x", n)
		c := p.Issue("r1", subject, 10)
		r := solveInPage(t, ctx, c, 10*time.Second)
		if want := pow.Solve(c.Token, c.Difficulty); r.Solution != want {
			t.Fatalf("token of %d bytes: worker %s, reference %s", len(c.Token), r.Solution, want)
		}
		if err := p.Verify(context.Background(), "r1", subject, c.Token, r.Solution); err != nil {
			t.Fatalf("token of %d bytes: worker's solution %s refused: %v", len(c.Token), r.Solution, err)
		}
	}
	c, want := longSearch(p)
	r := solveInPage(t, ctx, c, 30*time.Second)
	if r.Solution != want {
		t.Fatalf("long search: worker %s, reference %s", r.Solution, want)
	}
	if len(r.Progress) == 0 {
		t.Fatalf("no progress posted in %.0f ms", r.Ms)
	}
	last := r.Progress[len(r.Progress)-1]
	if sol, _ := strconv.ParseFloat(want, 64); last.Progress <= 0 || last.Progress > sol || last.Expected != math.Exp2(float64(c.Difficulty)) {
		t.Errorf("last progress %+v: want 0 < progress ≤ %s and expected 2^%d", last, want, c.Difficulty)
	}
	t.Logf("long search: %s hashes in %.0f ms, %d progress messages", want, r.Ms, len(r.Progress))
}

// longSearch returns a challenge whose solution is a counter of seven
// digits (1,000,000 to 3,000,000): enough for the worker to post progress.
func longSearch(p *pow.Pow) (pow.Challenge, string) {
	for {
		c := p.Issue("r1", "visitor-long", 20)
		sol := pow.Solve(c.Token, c.Difficulty)
		if n, _ := strconv.Atoi(sol); n >= 1_000_000 && n <= 3_000_000 {
			return c, sol
		}
	}
}

// A challenge the worker cannot take is answered with an error, not a hang.
func TestWorkerRefusesBadChallenges(t *testing.T) {
	ctx := browse(t)
	for _, expr := range []string{`solve("", 10)`, `solve("a.b", 0)`, `solve("a.b", 33)`, `solve("a.b", 1.5)`, `solve(7, 10)`} {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		r, err := chromedp.Run(cctx, chromedp.Evaluate[solved](expr, chromedp.EvalAwaitPromise))
		cancel()
		if err != nil || r.Error != "bad challenge" || r.Solution != "" {
			t.Errorf("%s: %+v, %v; want error %q", expr, r, err, "bad challenge")
		}
	}
}

// TestMeasureWorker logs the worker's solve times at DefaultDifficulty in
// this machine's headless Chromium, from the page's postMessage to the
// solution (a fresh worker each, as the page does), and the hash rates of
// the worker and of crypto.subtle. It asserts nothing about time. It runs
// only with WR_POW_MEASURE=1, and then fails if Chromium is missing.
func TestMeasureWorker(t *testing.T) {
	if os.Getenv("WR_POW_MEASURE") != "1" {
		t.Skip("a measurement: set WR_POW_MEASURE=1")
	}
	n := envInt(t, "WR_POW_MEASURE_N", 25)
	d := envInt(t, "WR_POW_MEASURE_DIFFICULTY", pow.DefaultDifficulty)
	p, _ := newPow(t, 10*time.Minute)
	ctx := browse(t)
	var ms []float64
	var hashes, total float64
	for i := range n {
		subject := "visitor-" + strconv.Itoa(i)
		c := p.Issue("default", subject, d)
		r := solveInPage(t, ctx, c, 5*time.Minute)
		if err := p.Verify(context.Background(), "default", subject, c.Token, r.Solution); err != nil {
			t.Fatalf("challenge %d: solution %s refused: %v", i, r.Solution, err)
		}
		tries, _ := strconv.ParseFloat(r.Solution, 64)
		hashes += tries + 1
		total += r.Ms
		ms = append(ms, r.Ms)
	}
	slices.Sort(ms)
	t.Logf("difficulty %d, %d challenges: median %.0f ms, p90 %.0f ms, mean %.0f ms, min %.0f ms, max %.0f ms",
		d, n, quantile(ms, 0.5), quantile(ms, 0.9), total/float64(n), ms[0], ms[n-1])
	t.Logf("worker: %.2f M hashes/s", hashes/total/1000)
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	rate, err := chromedp.Run(rctx, chromedp.Evaluate[float64](`subtleRate(`+strconv.Quote(p.Issue("default", "v", d).Token)+`, 200000)`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("crypto.subtle rate: %v", err)
	}
	t.Logf("crypto.subtle.digest, 256 in flight: %.2f M hashes/s", rate/1e6)
}

// quantile is the nearest-rank q-quantile of sorted xs.
func quantile(xs []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}
