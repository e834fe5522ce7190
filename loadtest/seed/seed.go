package seed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/pace"
	"waitingroom/loadtest/internal/report"
	"waitingroom/loadtest/internal/scenario"
)

// holdMetric is the contract's pool acquire→release histogram: the seed's
// key figure (HikariCP's hikaricp_connections_usage_seconds there).
const holdMetric = "waitingroom_db_connection_hold_seconds"

// maxCycles caps one VU's enter→order cycles (and client.MaxPolls one ticket's
// polls), so every loop ends by count even if the clock never stopped it.
const maxCycles = 100_000

// seedFigures is the seed's published first run (k6, 20 VUs × 60 s on a
// laptop with MySQL and Redis in Docker).
var seedFigures = struct {
	vus, orders, failed, polls200, polls404, enter200, enter500        int
	seconds, holdMeanMs, holdMaxMs, orderP50Ms, orderP95Ms, orderMaxMs float64
}{
	vus: 20, orders: 1076, failed: 0, polls200: 1358, polls404: 149, enter200: 973, enter500: 103,
	seconds: 60, holdMeanMs: 200, holdMaxMs: 1137, orderP50Ms: 275, orderP95Ms: 700, orderMaxMs: 1130,
}

// seedReport is what the seed scenario measured.
type seedReport struct {
	Scenario     string                     `json:"scenario"`
	Base         string                     `json:"base"`
	Room         string                     `json:"room"`
	TargetActive int64                      `json:"targetActive,omitempty"` // 0: the admin API was not readable
	Product      int64                      `json:"product"`
	VUs          int                        `json:"vus"`
	Seconds      float64                    `json:"seconds"`
	Interrupted  bool                       `json:"interrupted"`
	Orders       int                        `json:"ordersCompleted"`
	FailedOrders int                        `json:"ordersFailed"`         // neither 201 nor 429
	Refused      map[string]int             `json:"refused429,omitempty"` // 429s by endpoint: layer 1's refusals, not failures
	Polls        int                        `json:"polls"`
	Polls404     int                        `json:"polls404"`
	Hold         *holdReport                `json:"dbConnectionHold,omitempty"`
	HoldError    string                     `json:"dbConnectionHoldError,omitempty"`
	Endpoints    map[string]measure.Summary `json:"endpoints"`
}

// holdReport is the run's connection holds from two /metrics snapshots.
type holdReport struct {
	Count       float64  `json:"count"`
	MeanSeconds float64  `json:"meanSeconds"` // Δsum ÷ Δcount
	MaxAbove    float64  `json:"maxAboveSeconds"`
	MaxAtMost   *float64 `json:"maxAtMostSeconds"` // null: above the highest finite bucket
}

var seedEndpoints = []string{"login", "enter", "position", "orders"}

// Run is the seed scenario: args are its flags; o gets the common ones.
func Run(ctx context.Context, o *scenario.Options, args []string) (report.Report, error) {
	fs := scenario.NewFlagSet("seed", o)
	vus := fs.Int("vus", 20, "virtual users (user1…userN); the seed used targetActive's value, 20")
	dur := fs.Duration("duration", 60*time.Second, "how long the VUs loop")
	password := fs.String("password", "demo-pass", "password of the demo users")
	product := fs.Int64("product", 1, "product id to order")
	pollEvery := fs.Duration("poll-every", 500*time.Millisecond, "pause before each position poll")
	if err := o.Parse(fs, args); err != nil {
		return nil, err
	}
	if *vus < 1 || *dur <= 0 || *pollEvery <= 0 {
		return nil, errors.New("seed: --vus, --duration and --poll-every must be positive")
	}

	rec := measure.NewRecorder()
	a := &client.API{Base: o.Base, Room: o.Room, HTTP: client.New(*vus, o.Timeout), Rec: rec}
	adm := &client.Admin{Base: o.Admin, Token: o.AdminToken, Room: o.Room, HTTP: client.New(2, o.Timeout)}
	defer adm.HTTP.CloseIdleConnections() // idle connections hold up a server's graceful shutdown
	defer a.HTTP.CloseIdleConnections()
	rep := &seedReport{Scenario: "seed", Base: o.Base, Room: o.Room, Product: *product, VUs: *vus}
	if st, err := adm.RoomState(ctx); err == nil {
		rep.TargetActive = st.TargetActive
	}

	access, err := loginAll(ctx, a, *vus, *password)
	if err != nil {
		return nil, err
	}
	before, berr := adm.Histogram(ctx, holdMetric)

	fmt.Fprintf(os.Stderr, "seed: %d VUs for %v against %s (progress every 5 s)\n", *vus, *dur, o.Base)
	run, cancel := context.WithTimeout(ctx, *dur)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for _, tok := range access {
		wg.Go(func() { seedVU(run, ctx, a, tok, *product, *pollEvery) })
	}
	progress := startProgress(run, start, rec, adm)
	wg.Wait()
	progress()
	rep.Seconds = time.Since(start).Seconds()
	rep.Interrupted = ctx.Err() != nil

	// The after snapshot is taken even when interrupted: the report stands.
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer scancel()
	after, aerr := adm.Histogram(sctx, holdMetric)
	if err := errors.Join(berr, aerr); err != nil {
		rep.HoldError = err.Error()
	} else {
		rep.Hold, rep.HoldError = holdDelta(after.Sub(before))
	}

	rep.Endpoints = map[string]measure.Summary{}
	for _, ep := range seedEndpoints {
		rep.Endpoints[ep] = rec.Summary(ep)
	}
	rep.count()
	return rep, nil
}

// count derives the report's figures from its endpoints' status codes.
func (r *seedReport) count() {
	r.Refused = map[string]int{}
	for _, ep := range seedEndpoints {
		if n := r.Endpoints[ep].Codes[http.StatusTooManyRequests]; n > 0 {
			r.Refused[ep] = n
		}
	}
	orders, polls := r.Endpoints["orders"], r.Endpoints["position"]
	r.Orders = orders.Codes[http.StatusCreated]
	r.FailedOrders = orders.Count - r.Orders - r.Refused["orders"]
	r.Polls, r.Polls404 = polls.Count, polls.Codes[http.StatusNotFound]
}

// holdDelta turns the run's histogram into the report's figures.
func holdDelta(d measure.Histogram) (*holdReport, string) {
	if d.Count < 0 {
		return nil, "the hold counters went down: the server restarted during the run"
	}
	h := &holdReport{Count: d.Count, MeanSeconds: d.Mean()}
	if lo, hi, ok := d.MaxBucket(); ok {
		h.MaxAbove = lo
		if !math.IsInf(hi, 1) {
			h.MaxAtMost = &hi
		}
	}
	return h, ""
}

// Logins before the run: a few at a time, since the server verifies BCrypt
// hashes on a few slots (half the cores) and answers 503 to a login that
// waits too long for one, as 20 at once do on a busy 2-core machine. A 503
// is tried again after loginRetryPause, loginTries times in all.
const (
	loginsAtOnce    = 2
	loginTries      = 5
	loginRetryPause = time.Second
)

// loginAll logs in user1…userN and returns their access tokens.
func loginAll(ctx context.Context, a *client.API, n int, password string) ([]string, error) {
	tokens := make([]string, n)
	errs := make([]error, n)
	slots := make(chan struct{}, loginsAtOnce)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			user := "user" + strconv.Itoa(i+1)
			tok, code, err := a.Login(ctx, user, password)
			for try := 1; err == nil && code == http.StatusServiceUnavailable && try < loginTries && pace.Sleep(ctx, loginRetryPause); try++ {
				tok, code, err = a.Login(ctx, user, password)
			}
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("login %s: %w", user, err)
			case code == http.StatusUnauthorized:
				errs[i] = fmt.Errorf("login %s: HTTP 401 (seeded? `waitingroom seed --users N --password P`)", user)
			case code == http.StatusTooManyRequests:
				errs[i] = fmt.Errorf("login %s: HTTP 429: the server's login limits refused it (WR_LIMIT_LOGIN_*; WR_RATE_LIMITS=off turns layer 1 off)", user)
			case code != http.StatusOK:
				errs[i] = fmt.Errorf("login %s: HTTP %d", user, code)
			}
			tokens[i] = tok
		})
	}
	wg.Wait()
	return tokens, errors.Join(errs...)
}

// seedVU is one k6 virtual user of the seed's test: enter, poll position
// every pollEvery, order on READY, enter again. A 404 poll (not in the
// queue) re-enters, as the seed's clients did. Loops stop when run ends;
// requests use reqCtx, so the one in flight at the deadline still finishes
// and is counted (k6's graceful stop).
func seedVU(run, reqCtx context.Context, a *client.API, access string, product int64, pollEvery time.Duration) {
	for range maxCycles {
		if run.Err() != nil {
			return
		}
		st, code, err := a.Enter(reqCtx, access)
		if err != nil || code != http.StatusOK {
			pace.Sleep(run, pollEvery)
			continue
		}
		for polls := 0; st.Status != "READY" && polls < client.MaxPolls; polls++ {
			if !pace.Sleep(run, pollEvery) {
				return
			}
			got, code, err := a.Position(reqCtx, st.QueueToken)
			if code == http.StatusNotFound {
				break // lost: enter again
			}
			if err == nil && code == http.StatusOK {
				got.QueueToken = st.QueueToken
				st = got
			}
		}
		if st.Status == "READY" {
			a.Order(reqCtx, st.QueueToken, st.EntryToken, product)
		}
	}
}

// startProgress prints one plain line every 5 s until run ends; the
// returned func waits for the printer to stop.
func startProgress(run context.Context, start time.Time, rec *measure.Recorder, adm *client.Admin) (wait func()) {
	done := scenario.ProgressLines(run, adm, start, func() string {
		refused := rec.Count("orders", http.StatusTooManyRequests)
		return fmt.Sprintf("orders %s  enters %s  polls %s (404: %d)  failed orders %d  refused (429): enters %s orders %s  no response %d",
			report.Commas(rec.Count("orders", http.StatusCreated)),
			report.Commas(rec.Total("enter")), report.Commas(rec.Total("position")), rec.Count("position", http.StatusNotFound),
			rec.Total("orders")-rec.Count("orders", http.StatusCreated)-refused,
			report.Commas(rec.Count("enter", http.StatusTooManyRequests)), report.Commas(refused), noResponse(rec))
	})
	return func() { <-done }
}

func noResponse(rec *measure.Recorder) int {
	n := 0
	for _, ep := range seedEndpoints {
		n += rec.Count(ep, measure.NoResponse)
	}
	return n
}

func (r *seedReport) Print(w io.Writer) {
	s := seedFigures
	fmt.Fprintf(w, "\nseed scenario: %d VUs × %.1f s against %s, room %s", r.VUs, r.Seconds, r.Base, r.Room)
	if r.TargetActive > 0 {
		fmt.Fprintf(w, " (targetActive %d)", r.TargetActive)
	}
	fmt.Fprintf(w, ", product %d\n", r.Product)
	if r.Interrupted {
		fmt.Fprintln(w, "INTERRUPTED: the figures cover the run up to Ctrl-C")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\t this run\t seed (k6, %d VUs × %.0f s)\n", s.vus, s.seconds)
	fmt.Fprintf(tw, "orders completed\t %s (%.1f/s)\t %s (%.1f/s)\n",
		report.Commas(r.Orders), float64(r.Orders)/r.Seconds, report.Commas(s.orders), float64(s.orders)/s.seconds)
	fmt.Fprintf(tw, "failed orders (not 201, not 429)\t %d\t %d\n", r.FailedOrders, s.failed)
	fmt.Fprintf(tw, "orders refused by layer 1 (429)\t %s\t - (no rate limits)\n", report.Commas(r.Refused["orders"]))
	o := r.Endpoints["orders"]
	fmt.Fprintf(tw, "order p50 / p95 / max\t %s / %s / %s\t %.0f / %.0f / %s ms\n",
		report.Ms(o.P50), report.Ms(o.P95), report.Ms(o.Max), s.orderP50Ms, s.orderP95Ms, report.Commas(int(s.orderMaxMs)))
	seedMean := fmt.Sprintf("%.0f ms (830.741 s / 4,165 holds)", s.holdMeanMs)
	seedMax := fmt.Sprintf("%s ms", report.Commas(int(s.holdMaxMs)))
	if h := r.Hold; h != nil {
		fmt.Fprintf(tw, "DB connection hold mean\t %s (Δsum/Δcount, %s holds)\t %s\n",
			report.Ms(seconds(h.MeanSeconds)), report.Commas(int(h.Count)), seedMean)
		fmt.Fprintf(tw, "DB connection hold max\t %s\t %s\n", maxBound(h), seedMax)
	} else {
		fmt.Fprintf(tw, "DB connection hold mean\t (no /metrics: %s)\t %s\n", r.HoldError, seedMean)
		fmt.Fprintf(tw, "DB connection hold max\t -\t %s\n", seedMax)
	}
	seedPolls := s.polls200 + s.polls404
	seedAll := s.enter200 + s.enter500 + seedPolls + s.orders
	fmt.Fprintf(tw, "polls lost to 404\t %s of %s (%.1f%%)\t %d of %s (%.1f%%); with enter's %d × 500: %.1f%% of all requests\n",
		report.Commas(r.Polls404), report.Commas(r.Polls), pct(r.Polls404, r.Polls),
		s.polls404, report.Commas(seedPolls), pct(s.polls404, seedPolls), s.enter500, pct(s.polls404+s.enter500, seedAll))
	tw.Flush()

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "endpoint\trequests\tstatus codes\tp50 ms\tp90 ms\tp95 ms\tp99 ms\tmax ms\t")
	for _, ep := range seedEndpoints {
		e := r.Endpoints[ep]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", ep, report.Commas(e.Count), e.CodesString(),
			report.Msf(e.P50), report.Msf(e.P90), report.Msf(e.P95), report.Msf(e.P99), report.Msf(e.Max))
	}
	tw.Flush()
	fmt.Fprintf(w, "seed's status codes: enter 200×%d 500×%d · position 200×%d 404×%d · orders 200×%d (the seed answered orders with 200)\n",
		s.enter200, s.enter500, s.polls200, s.polls404, s.orders)
	fmt.Fprintln(w, "hold figures: Δ of two /metrics snapshots taken after the logins and after the run; the max is a histogram bucket bound, not a sample")
	r.printRefused(w)
}

// printRefused says plainly when layer 1 refused part of the run, why, and
// how to run it as the seed's figures were measured.
func (r *seedReport) printRefused(w io.Writer) {
	total := 0
	parts := []string{}
	for _, ep := range seedEndpoints {
		if n := r.Refused[ep]; n > 0 {
			total += n
			parts = append(parts, fmt.Sprintf("%s %s", ep, report.Commas(n)))
		}
	}
	if total == 0 {
		return
	}
	perMin := func(ep string) float64 {
		if r.Seconds <= 0 || r.VUs == 0 {
			return 0
		}
		return float64(r.Endpoints[ep].Count) / float64(r.VUs) / (r.Seconds / 60)
	}
	fmt.Fprintf(w, "\nLAYER 1 REFUSED PART OF THIS RUN: %s requests answered 429 (%s); they are not failed orders.\n",
		report.Commas(total), strings.Join(parts, ", "))
	fmt.Fprintf(w, "Why: this loop is %d users each entering about %.0f and ordering about %.0f times a minute, all from one address;\n"+
		"the server's per-user and per-address limits (WR_LIMIT_ENTER_USER, WR_LIMIT_ORDER_USER, WR_LIMIT_ENTER_IP: 20, 10 and 120 a minute\n"+
		"by default) rightly refuse that. The seed's figures were measured without layer 1: to compare, start the server with\n"+
		"WR_RATE_LIMITS=off (e.g. `WR_RATE_LIMITS=off make run CROWD=0`) and run this again.\n",
		r.VUs, perMin("enter"), perMin("orders"))
}

// maxBound says where the largest hold lies, by bucket bounds.
func maxBound(h *holdReport) string {
	switch {
	case h.Count == 0:
		return "-"
	case h.MaxAtMost == nil:
		return "> " + report.Ms(seconds(h.MaxAbove)) + " (above the highest bucket)"
	}
	return fmt.Sprintf("≤ %s (bucket %s – %s)", report.Ms(seconds(*h.MaxAtMost)), report.Ms(seconds(h.MaxAbove)), report.Ms(seconds(*h.MaxAtMost)))
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func pct(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}
