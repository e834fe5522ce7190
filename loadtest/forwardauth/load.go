package forwardauth

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"sync"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/pace"
)

// maxFailures is how many failed requests a phase describes.
const maxFailures = 5

// target is what one phase asks, the same request over and over, worker w
// with headers[w mod len(headers)]: passed reports whether an answer shows
// a pass (Waitingroom-Pass from /_wr/auth, Origin-Got-Pass 1 from the
// origin).
type target struct {
	url     string
	headers []http.Header
	passed  func(http.Header) bool
}

// tally is what one worker saw.
type tally struct {
	rec      *measure.Recorder
	passes   int
	cookies  int // answers setting a cookie
	failures []string
}

// closedLoop runs conns workers against t for d; each sends its next
// request as soon as the previous answer is read. Requests use ctx, not
// the deadline, so the ones in flight at the deadline finish and count;
// the elapsed time runs until the last of them.
func closedLoop(ctx context.Context, hc *http.Client, t target, conns int, d time.Duration) (tally, time.Duration) {
	run, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	tallies := make([]tally, conns)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range conns {
		tl := &tallies[w]
		tl.rec = measure.NewRecorder()
		wg.Go(func() {
			for run.Err() == nil {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.url, nil)
				if err != nil {
					tl.fail(err.Error())
					return
				}
				req.Header = t.headers[w%len(t.headers)].Clone()
				t0 := time.Now()
				resp, err := hc.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						tl.rec.Record("", measure.NoResponse, time.Since(t0))
						tl.fail(err.Error())
					}
					pace.Sleep(run, 10*time.Millisecond) // no hot spin on a refused connection
					continue
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				code := resp.StatusCode
				if err != nil {
					code = measure.NoResponse
					tl.fail(err.Error())
				} else if code != http.StatusOK {
					tl.fail(refusal(resp))
				}
				tl.rec.Record("", code, time.Since(t0))
				if t.passed(resp.Header) {
					tl.passes++
				}
				if len(resp.Header.Values("Set-Cookie")) > 0 {
					tl.cookies++
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := tally{rec: measure.NewRecorder()}
	for _, tl := range tallies {
		all.rec.Merge(tl.rec)
		all.passes += tl.passes
		all.cookies += tl.cookies
		for _, f := range tl.failures {
			all.fail(f)
		}
	}
	return all, elapsed
}

func (t *tally) fail(why string) {
	if len(t.failures) < maxFailures {
		t.failures = append(t.failures, why)
	}
}

// probe reads what a phase cost: the processes' and the machine's CPU,
// and the decisions the waiting room counted.
type probe struct {
	srcs []cpuSource
	adm  *client.Admin
}

// decisionsMetric counts the waiting room's decisions, by kind and
// outcome.
const decisionsMetric = "waitingroom_gateway_requests_total"

// mark is the counters at the start of a measured phase.
type mark struct {
	cpu       cpuMark
	decisions float64
	ok        bool // the decisions were read
}

func (p *probe) begin(ctx context.Context) mark {
	m := mark{}
	got, _ := client.ScrapeNames(ctx, p.adm, decisionsMetric)
	m.decisions, m.ok = got[decisionsMetric]
	m.cpu = readCPU(p.srcs)
	return m
}

// end reads the counters again and adds to ph its costs: CPU µs per
// request of each process and the machine's busy cores, and the
// decisions counted over the phase.
func (p *probe) end(ctx context.Context, m mark, ph *phase) {
	c := readCPU(p.srcs)
	got, _ := client.ScrapeNames(ctx, p.adm, decisionsMetric)
	if d, ok := got[decisionsMetric]; ok && m.ok {
		ph.Decisions = int(d - m.decisions + 0.5)
		ph.DecisionsKnown = true
	}
	ph.CPUMicros = map[string]float64{}
	for name, t0 := range m.cpu.procs {
		if t1, ok := c.procs[name]; ok && ph.Requests > 0 {
			us := float64(t1-t0) / clockTicks * 1e6 / float64(ph.Requests)
			ph.CPUMicros[name] = us
			if name != procTool {
				ph.ServingMicros += us
			}
		}
	}
	if dt := c.total - m.cpu.total; dt > 0 {
		ph.BusyCores = float64(c.busy-m.cpu.busy) / float64(dt) * float64(runtime.NumCPU())
		if ph.Requests > 0 {
			ph.MachineMicros = float64(c.busy-m.cpu.busy) / clockTicks * 1e6 / float64(ph.Requests)
		}
	}
}

// measure runs a phase: warm unmeasured (it opens the connections), then
// d measured between the probe's two reads.
func (p *probe) measure(ctx context.Context, hc *http.Client, name string, t target, conns int, warm, d time.Duration) *phase {
	if warm > 0 {
		closedLoop(ctx, hc, t, conns, warm)
	}
	m := p.begin(ctx)
	tl, elapsed := closedLoop(ctx, hc, t, conns, d)
	s := tl.rec.Summary("")
	ph := &phase{Name: name, URL: t.url, Conns: conns, Seconds: elapsed.Seconds(), Requests: s.Count, OK: s.Codes[http.StatusOK],
		Latency: s, Passes: tl.passes, SetCookies: tl.cookies, Failures: tl.failures}
	if ph.Seconds > 0 {
		ph.RPS = float64(ph.OK) / ph.Seconds
	}
	p.end(ctx, m, ph)
	hc.CloseIdleConnections()
	return ph
}

// refusal describes an answer other than 200: its status, and for
// /_wr/auth's answers to nginx the real status and body it carries.
func refusal(resp *http.Response) string {
	why := resp.Status
	if s := resp.Header.Get("Waitingroom-Status"); s != "" {
		why += " (Waitingroom-Status " + s + ", Waitingroom-Answer " + resp.Header.Get("Waitingroom-Answer") + ")"
	}
	if l := resp.Header.Get("Location"); l != "" {
		why += " (Location " + l + ")"
	}
	return why
}
