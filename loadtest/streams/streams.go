package streams

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/mint"
	"waitingroom/loadtest/internal/report"
	"waitingroom/loadtest/internal/scenario"
	"waitingroom/loadtest/internal/stream"
	"waitingroom/loadtest/internal/users"
)

// The contract's bars for push (DESIGN.md, "Performance bars"), at
// barStreams streams on one instance.
const (
	barStreams     = 10_000
	barLagP99      = 250 * time.Millisecond
	moonshotLagP99 = 100 * time.Millisecond
	barRSSKiB      = 30.0
)

// Lag bands: where the receiving user stood, by the event's own status.
// The hub coalesces by band (every admission up to 100, 1 s up to 1000,
// 5 s beyond), so a band's lag includes what coalescing holds back.
var lagBands = []string{"all", "READY", "1–100", "101–1000", ">1000"}

// lagBand is the index in lagBands (1…) of an event with status st.
func lagBand(st stream.Status) int {
	switch {
	case st.Status == "READY":
		return 1
	case st.Position <= 100:
		return 2
	case st.Position <= 1000:
		return 3
	}
	return 4
}

// outcome is where one stream ended.
type outcome uint8

const (
	outNotOpened   outcome = iota // no attempt finished (Ctrl-C, or not prepared)
	outOpenFailed                 // no stream, or no first message
	outOpen                       // open and waiting; at the end closed by the tool
	outReady                      // READY received, not ordered (Ctrl-C)
	outOrdered                    // READY, then the order was placed (201)
	outOrderFailed                // READY, then the order failed
	outGone                       // the server said gone
	outDropped                    // ended by the server without gone, or silent for --idle
)

// streamResult is one stream's record; only its own goroutine writes it.
type streamResult struct {
	outcome    outcome
	why        string // why opening failed or the stream dropped
	openDur    time.Duration
	events     int // status events, the first (on connect) included
	bad        int // undecodable messages
	other      int // messages neither status nor gone
	noTS       int // status events after the first without "ts"
	heartbeats int
	lags       [4][]time.Duration // by lagBand − 1
}

// streamCounters are live totals for the progress line.
type streamCounters struct {
	opened, openFailed, events, ready, ordered, orderFailed, gone, dropped atomic.Int64
}

// streamsRun is one run's shared state.
type streamsRun struct {
	ctx     context.Context // Ctrl-C: orders and cleanup requests
	streams context.Context // cancelled to close every stream
	dialer  *stream.Dialer
	api     *client.API
	product int64
	timeout time.Duration
	openSem chan struct{}
	opening sync.WaitGroup // one count per stream until its open attempt ends
	start   time.Time
	lastOK  atomic.Int64 // ns after start of the last successful open
	results []streamResult
	cnt     streamCounters
}

// streamsConfig is the streams scenario's flags.
type streamsConfig struct {
	n, first, conns int
	transport       string
	dur, idle       time.Duration
	target          int64
	product         int64
	password        string
	mt              *mint.Minter // nil: log in
}

// parseStreamsFlags reads and checks the streams scenario's flags.
func parseStreamsFlags(o *scenario.Options, args []string) (streamsConfig, error) {
	fs := scenario.NewFlagSet("streams", o)
	n := fs.Int("n", barStreams, "streams: users user<first-user>… each enter the queue and hold one")
	transport := fs.String("transport", "sse", "sse (GET events, Bearer queue token) or ws (GET ws?token=)")
	dur := fs.Duration("duration", 60*time.Second, "how long admissions are driven once the streams are open")
	target := fs.Int64("target", 20, "targetActive while driving admissions (the original is restored)")
	minterFromFlags := mint.Flags(fs)
	password := fs.String("password", "demo-pass", "password of the demo users (without --mint-tokens)")
	first := fs.Int("first-user", 1, "first user: user<k> with database id k (a freshly seeded database)")
	product := fs.Int64("product", 1, "product each admitted user orders")
	conns := fs.Int("conns", 64, "concurrent logins, enters, stream opens and leaves")
	idle := fs.Duration("idle", 45*time.Second, "a stream silent this long (not even a heartbeat; the contract's: ≤ 15 s) counts as dropped")
	if err := o.Parse(fs, args); err != nil {
		return streamsConfig{}, err
	}
	if *n < 1 || *conns < 1 || *dur <= 0 || *target < 1 || *first < 1 || *idle <= 0 {
		return streamsConfig{}, errors.New("streams: -n, --conns, --duration, --target, --first-user and --idle must be positive")
	}
	mt, err := minterFromFlags()
	if err != nil {
		return streamsConfig{}, fmt.Errorf("streams: %w", err)
	}
	return streamsConfig{n: *n, first: *first, conns: *conns, transport: *transport, dur: *dur, idle: *idle,
		target: *target, product: *product, password: *password, mt: mt}, nil
}

// Run is the streams scenario: freeze admission, enter the users
// (prepareStreams), open a stream each (openStreams), admit again for
// --duration (driveStreams), then read the report from what each stream
// recorded.
func Run(ctx context.Context, o *scenario.Options, args []string) (report.Report, error) {
	cfg, err := parseStreamsFlags(o, args)
	if err != nil {
		return nil, err
	}
	if err := scenario.CheckNoFile(cfg.n + cfg.conns + 64); err != nil {
		return nil, fmt.Errorf("streams: %w", err)
	}
	dialer, err := stream.NewDialer(cfg.transport, o.Base, o.Room, o.Timeout, cfg.idle)
	if err != nil {
		return nil, err
	}

	rec := measure.NewRecorder()
	a := &client.API{Base: o.Base, Room: o.Room, HTTP: client.New(cfg.conns, o.Timeout), Rec: rec}
	adm := &client.Admin{Base: o.Admin, Token: o.AdminToken, Room: o.Room, HTTP: client.New(2, o.Timeout)}
	rep := &streamsReport{Scenario: "streams", Transport: cfg.transport, Base: o.Base, Room: o.Room, CPUs: runtime.NumCPU(),
		Users: cfg.n, Target: cfg.target, Tokens: "login"}
	if cfg.mt != nil {
		rep.Tokens = "minted (kid " + cfg.mt.Kid + ")"
	}

	// Freeze admission while users enter and streams open, so that all of
	// them are waiting; restore the room's own target at the end, also
	// after Ctrl-C.
	original, restore, err := users.FreezeAdmission(ctx, adm, "streams", "freezing admission")
	if err != nil {
		return nil, err
	}
	defer restore()
	rep.OriginalTarget = original
	cleanup := context.WithoutCancel(ctx)

	fmt.Fprintf(os.Stderr, "streams: admission frozen (targetActive %d → 0); preparing %s users (%s tokens)\n",
		original, report.Commas(cfg.n), rep.Tokens)
	queueTokens, perr := prepareStreams(ctx, a, cfg, rep)
	defer users.LeaveAll(cleanup, a, adm, queueTokens, cfg.conns)
	if ctx.Err() != nil {
		rep.Interrupted = true
		return rep, nil
	}
	if rep.Prepared == 0 {
		return rep, fmt.Errorf("streams: no user could enter: %w", perr)
	}
	a.HTTP.CloseIdleConnections() // the enter connections are not the server's streams
	rep.Server.Before, rep.Server.BeforeErr = client.ScrapeMetrics(ctx, adm)

	streams, closeStreams := context.WithCancel(ctx)
	defer closeStreams()
	r := &streamsRun{ctx: ctx, streams: streams, dialer: dialer, api: a, product: cfg.product, timeout: o.Timeout,
		openSem: make(chan struct{}, cfg.conns), start: time.Now(), results: make([]streamResult, cfg.n)}
	fmt.Fprintf(os.Stderr, "streams: opening %s %s streams, %d at a time\n", report.Commas(rep.Prepared), cfg.transport, cfg.conns)
	all, allDone := r.openStreams(queueTokens)
	progressCtx, stopProgress := context.WithCancel(ctx)
	progressDone := r.progress(progressCtx, adm)
	waitGroup(ctx, &r.opening)
	rep.OpenSeconds = time.Since(r.start).Seconds()
	rep.LastOpenSeconds = time.Duration(r.lastOK.Load()).Seconds()
	if ctx.Err() == nil {
		r.drive(ctx, adm, cfg, rep, allDone, perr)
	}
	stopProgress()
	<-progressDone
	rep.Interrupted = ctx.Err() != nil

	// The last sample sees the streams still open; then they are closed.
	sctx, scancel := context.WithTimeout(cleanup, 5*time.Second)
	rep.Server.End, rep.Server.EndErr = client.ScrapeMetrics(sctx, adm)
	scancel()
	closeStreams()
	all.Wait()
	rep.collect(r.results, rec)
	for i, res := range r.results {
		if res.outcome == outOrdered {
			queueTokens[i] = "" // already gone from the queue: nothing to leave
		}
	}
	return rep, nil
}

// prepareStreams gets the users' access tokens, then a place in the queue
// for each: their queue tokens ("" for a user who could not enter).
func prepareStreams(ctx context.Context, a *client.API, cfg streamsConfig, rep *streamsReport) ([]string, error) {
	prepStart := time.Now()
	queueTokens, perr := users.Prepare(ctx, a, cfg.mt, cfg.n, cfg.first, cfg.conns, cfg.password)
	rep.PrepareSeconds = time.Since(prepStart).Seconds()
	if perr != nil {
		rep.Errors = perr.Error()
	}
	for _, t := range queueTokens {
		if t != "" {
			rep.Prepared++
		}
	}
	return queueTokens, perr
}

// openStreams opens a stream for every user who entered, --conns at a time
// (r.openSem); each then reads on its own. all counts the streams until
// they end; allDone is closed when every one has.
func (r *streamsRun) openStreams(queueTokens []string) (all *sync.WaitGroup, allDone <-chan struct{}) {
	all = &sync.WaitGroup{}
	for i, tok := range queueTokens {
		if tok == "" {
			continue
		}
		r.opening.Add(1)
		all.Go(func() { r.stream(i, tok) })
	}
	done := make(chan struct{})
	go func() { all.Wait(); close(done) }()
	return all, done
}

// drive admits again, and lets every READY stream order (which frees its
// slot), for --duration or until every stream has finished.
func (r *streamsRun) drive(ctx context.Context, adm *client.Admin, cfg streamsConfig, rep *streamsReport, allDone <-chan struct{}, perr error) {
	rep.Server.Open, rep.Server.OpenErr = client.ScrapeMetrics(ctx, adm)
	fmt.Fprintf(os.Stderr, "streams: %s open in %.1f s; targetActive 0 → %d for %v\n",
		report.Commas(int(r.cnt.opened.Load())), rep.OpenSeconds, cfg.target, cfg.dur)
	if err := adm.SetTarget(ctx, cfg.target); err != nil {
		rep.Errors = errors.Join(perr, fmt.Errorf("streams: %w", err)).Error()
		return
	}
	driveStart := time.Now()
	t := time.NewTimer(cfg.dur)
	select {
	case <-t.C:
	case <-allDone:
	case <-ctx.Done():
	}
	t.Stop()
	rep.DriveSeconds = time.Since(driveStart).Seconds()
}

// stream is one stream's goroutine: open (--conns at a time), read until
// READY, gone, a drop or the end of the run, then order on READY.
func (r *streamsRun) stream(i int, queueToken string) {
	res := &r.results[i]
	select {
	case r.openSem <- struct{}{}:
	case <-r.streams.Done():
		r.opening.Done()
		return
	}
	octx, cancel := context.WithTimeout(r.streams, r.timeout)
	t0 := time.Now()
	pc, first, err := r.dialer.Open(octx, queueToken)
	cancel()
	<-r.openSem
	if err != nil {
		if r.streams.Err() == nil {
			res.outcome, res.why = outOpenFailed, stream.WhyEnded(err)
			r.cnt.openFailed.Add(1)
		}
		r.opening.Done()
		return
	}
	res.outcome, res.openDur = outOpen, time.Since(t0)
	r.cnt.opened.Add(1)
	for at := int64(time.Since(r.start)); ; {
		last := r.lastOK.Load()
		if at <= last || r.lastOK.CompareAndSwap(last, at) {
			break
		}
	}
	r.opening.Done()

	stop := context.AfterFunc(r.streams, pc.Close)
	entry := r.handle(res, first, true)
	for res.outcome == outOpen {
		m, err := pc.Next()
		if err != nil {
			if r.streams.Err() == nil {
				res.outcome, res.why = outDropped, stream.WhyEnded(err)
				r.cnt.dropped.Add(1)
			}
			break
		}
		entry = r.handle(res, m, false)
	}
	stop()
	res.heartbeats = pc.Heartbeats()
	pc.Close()
	if res.outcome != outReady || r.ctx.Err() != nil {
		return
	}
	// Admitted: order at once, which frees the slot for the next user. The
	// order uses the run's own context, so one in flight at the end of
	// --duration completes.
	if code, _ := r.api.Order(r.ctx, queueToken, entry, r.product); code == http.StatusCreated {
		res.outcome = outOrdered
		r.cnt.ordered.Add(1)
	} else if r.ctx.Err() == nil {
		res.outcome = outOrderFailed
		r.cnt.orderFailed.Add(1)
	}
}

// handle records one message; it returns the entry token of a READY.
func (r *streamsRun) handle(res *streamResult, m stream.Msg, first bool) (entry string) {
	switch {
	case m.Bad:
		res.bad++
	case m.Kind == "status":
		res.events++
		r.cnt.events.Add(1)
		// The first event is the status as of connecting, not a fan-out.
		if !first {
			if m.Status.TS == 0 {
				res.noTS++
			} else if b := lagBand(m.Status) - 1; len(res.lags[b]) < stream.MaxLagSamples {
				res.lags[b] = append(res.lags[b], max(m.At.Sub(time.UnixMilli(m.Status.TS)), 0))
			}
		}
		if m.Status.Status == "READY" {
			res.outcome = outReady
			r.cnt.ready.Add(1)
			return m.Status.EntryToken
		}
	case m.Kind == "gone":
		res.outcome = outGone
		r.cnt.gone.Add(1)
	default:
		res.other++
	}
	return ""
}

// progress prints one line every 5 s until ctx ends; the channel closes
// when it has stopped.
func (r *streamsRun) progress(ctx context.Context, adm *client.Admin) <-chan struct{} {
	return scenario.ProgressLines(ctx, adm, r.start, func() string {
		c := &r.cnt
		return fmt.Sprintf("open %s (failed %d)  events %s  READY %s  ordered %s (failed %d)  gone %d  dropped %d",
			report.Commas(int(c.opened.Load())), c.openFailed.Load(), report.Commas(int(c.events.Load())),
			report.Commas(int(c.ready.Load())), report.Commas(int(c.ordered.Load())), c.orderFailed.Load(), c.gone.Load(), c.dropped.Load())
	})
}

// waitGroup waits for wg or for ctx to end.
func waitGroup(ctx context.Context, wg *sync.WaitGroup) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
