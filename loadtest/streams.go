package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/pace"
	"waitingroom/loadtest/internal/report"
)

// The contract's bars for push (DESIGN.md, "Performance bars"), at
// barStreams streams on one instance.
const (
	barStreams     = 10_000
	barLagP99      = 250 * time.Millisecond
	moonshotLagP99 = 100 * time.Millisecond
	barRSSKiB      = 30.0
)

// maxLagSamples caps the lag samples one stream keeps, so memory stays
// bounded whatever the server sends (a stream at the front gets about one
// event per admission tick: 600 a minute at the default 100 ms).
const maxLagSamples = 10_000

// Lag bands: where the receiving user stood, by the event's own status.
// The hub coalesces by band (every admission up to 100, 1 s up to 1000,
// 5 s beyond), so a band's lag includes what coalescing holds back.
var lagBands = []string{"all", "READY", "1–100", "101–1000", ">1000"}

// lagBand is the index in lagBands (1…) of an event with status st.
func lagBand(st pushStatus) int {
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
	dialer  *streamDialer
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
	mt              *minter // nil: log in
}

// parseStreamsFlags reads and checks the streams scenario's flags.
func parseStreamsFlags(o *options, args []string) (streamsConfig, error) {
	fs := newFlagSet("streams", o)
	n := fs.Int("n", barStreams, "streams: users user<first-user>… each enter the queue and hold one")
	transport := fs.String("transport", "sse", "sse (GET events, Bearer queue token) or ws (GET ws?token=)")
	dur := fs.Duration("duration", 60*time.Second, "how long admissions are driven once the streams are open")
	target := fs.Int64("target", 20, "targetActive while driving admissions (the original is restored)")
	minterFromFlags := mintFlags(fs)
	password := fs.String("password", "demo-pass", "password of the demo users (without --mint-tokens)")
	first := fs.Int("first-user", 1, "first user: user<k> with database id k (a freshly seeded database)")
	product := fs.Int64("product", 1, "product each admitted user orders")
	conns := fs.Int("conns", 64, "concurrent logins, enters, stream opens and leaves")
	idle := fs.Duration("idle", 45*time.Second, "a stream silent this long (not even a heartbeat; the contract's: ≤ 15 s) counts as dropped")
	if err := o.parse(fs, args); err != nil {
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

// runStreams is the streams scenario: freeze admission, enter the users
// (prepareStreams), open a stream each (openStreams), admit again for
// --duration (driveStreams), then read the report from what each stream
// recorded.
func runStreams(ctx context.Context, o *options, args []string) (report.Report, error) {
	cfg, err := parseStreamsFlags(o, args)
	if err != nil {
		return nil, err
	}
	if err := checkNoFile(cfg.n + cfg.conns + 64); err != nil {
		return nil, fmt.Errorf("streams: %w", err)
	}
	dialer, err := newStreamDialer(cfg.transport, o.base, o.room, o.timeout, cfg.idle)
	if err != nil {
		return nil, err
	}

	rec := measure.NewRecorder()
	a := &client.API{Base: o.base, Room: o.room, HTTP: client.New(cfg.conns, o.timeout), Rec: rec}
	adm := &client.Admin{Base: o.admin, Token: o.adminToken, Room: o.room, HTTP: client.New(2, o.timeout)}
	rep := &streamsReport{Scenario: "streams", Transport: cfg.transport, Base: o.base, Room: o.room, CPUs: runtime.NumCPU(),
		Users: cfg.n, Target: cfg.target, Tokens: "login"}
	if cfg.mt != nil {
		rep.Tokens = "minted (kid " + cfg.mt.kid + ")"
	}

	// Freeze admission while users enter and streams open, so that all of
	// them are waiting; restore the room's own target at the end, also
	// after Ctrl-C.
	original, restore, err := freezeAdmission(ctx, adm, "streams", "freezing admission")
	if err != nil {
		return nil, err
	}
	defer restore()
	rep.OriginalTarget = original
	cleanup := context.WithoutCancel(ctx)

	fmt.Fprintf(os.Stderr, "streams: admission frozen (targetActive %d → 0); preparing %s users (%s tokens)\n",
		original, report.Commas(cfg.n), rep.Tokens)
	queueTokens, perr := prepareStreams(ctx, a, cfg, rep)
	defer leaveAllConcurrently(cleanup, a, adm, queueTokens, cfg.conns)
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
	r := &streamsRun{ctx: ctx, streams: streams, dialer: dialer, api: a, product: cfg.product, timeout: o.timeout,
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

// freezeAdmission sets the room's targetActive to 0, so that every user a
// scenario enters stays waiting, and returns the room's own target and a
// restore that puts it back — with a context of its own, so that it also
// runs after Ctrl-C. why names the step in the error when the admin API
// cannot be read.
func freezeAdmission(ctx context.Context, adm *client.Admin, scenario, why string) (int64, func(), error) {
	room, err := adm.RoomState(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %s needs the admin API: %w", scenario, why, err)
	}
	if err := adm.SetTarget(ctx, 0); err != nil {
		return 0, nil, fmt.Errorf("%s: %w", scenario, err)
	}
	cleanup := context.WithoutCancel(ctx)
	restore := func() {
		cctx, cancel := context.WithTimeout(cleanup, 10*time.Second)
		defer cancel()
		if err := adm.SetTarget(cctx, room.TargetActive); err != nil {
			fmt.Fprintf(os.Stderr, "%s: could not restore targetActive %d: %v\n", scenario, room.TargetActive, err)
		}
	}
	return room.TargetActive, restore, nil
}

// prepareStreams gets the users' access tokens, then a place in the queue
// for each: their queue tokens ("" for a user who could not enter).
func prepareStreams(ctx context.Context, a *client.API, cfg streamsConfig, rep *streamsReport) ([]string, error) {
	prepStart := time.Now()
	queueTokens, perr := prepareUsers(ctx, a, cfg.mt, cfg.n, cfg.first, cfg.conns, cfg.password)
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

// prepareUsers returns the users' queue tokens, "" for a user that could
// not be prepared. Access tokens are minted (mt non-nil) or come from
// logins; every user then enters, conns at a time. A user still READY from
// an earlier run leaves and enters again, which puts it back in the queue.
func prepareUsers(ctx context.Context, a *client.API, mt *minter, n, first, conns int, password string) ([]string, error) {
	access, lerr := accessTokens(ctx, a, mt, n, first, conns, password)
	if mt != nil && lerr != nil {
		return nil, fmt.Errorf("streams: %w", lerr)
	}
	queue := make([]string, n)
	eerr := pace.ForEach(ctx, "enter", n, conns, func(i int) error {
		if access[i] == "" {
			return nil // its login failed and was counted
		}
		var st client.QueueStatus
		for attempt := range 2 {
			code, err := client.WithRetry(ctx, func() (int, error) {
				var code int
				var err error
				st, code, err = a.Enter(ctx, access[i])
				return code, err
			})
			if err == nil && code != http.StatusOK {
				err = client.StatusError(code)
			}
			if err != nil {
				return fmt.Errorf("enter user%d: %w", first+i, err)
			}
			if st.Status == "WAITING" || attempt == 1 {
				break
			}
			a.Leave(ctx, st.QueueToken)
		}
		if st.Status != "WAITING" {
			return fmt.Errorf("user%d is %s, not WAITING, with admission frozen", first+i, st.Status)
		}
		queue[i] = st.QueueToken
		return nil
	})
	return queue, errors.Join(lerr, eerr)
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
	pc, first, err := r.dialer.open(octx, queueToken)
	cancel()
	<-r.openSem
	if err != nil {
		if r.streams.Err() == nil {
			res.outcome, res.why = outOpenFailed, whyEnded(err)
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

	stop := context.AfterFunc(r.streams, pc.close)
	entry := r.handle(res, first, true)
	for res.outcome == outOpen {
		m, err := pc.next()
		if err != nil {
			if r.streams.Err() == nil {
				res.outcome, res.why = outDropped, whyEnded(err)
				r.cnt.dropped.Add(1)
			}
			break
		}
		entry = r.handle(res, m, false)
	}
	stop()
	res.heartbeats = pc.heartbeats()
	pc.close()
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
func (r *streamsRun) handle(res *streamResult, m pushMsg, first bool) (entry string) {
	switch {
	case m.bad:
		res.bad++
	case m.kind == "status":
		res.events++
		r.cnt.events.Add(1)
		// The first event is the status as of connecting, not a fan-out.
		if !first {
			if m.st.TS == 0 {
				res.noTS++
			} else if b := lagBand(m.st) - 1; len(res.lags[b]) < maxLagSamples {
				res.lags[b] = append(res.lags[b], max(m.at.Sub(time.UnixMilli(m.st.TS)), 0))
			}
		}
		if m.st.Status == "READY" {
			res.outcome = outReady
			r.cnt.ready.Add(1)
			return m.st.EntryToken
		}
	case m.kind == "gone":
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
	return progressLines(ctx, adm, r.start, func() string {
		c := &r.cnt
		return fmt.Sprintf("open %s (failed %d)  events %s  READY %s  ordered %s (failed %d)  gone %d  dropped %d",
			report.Commas(int(c.opened.Load())), c.openFailed.Load(), report.Commas(int(c.events.Load())),
			report.Commas(int(c.ready.Load())), report.Commas(int(c.ordered.Load())), c.orderFailed.Load(), c.gone.Load(), c.dropped.Load())
	})
}

// leaveAllConcurrently freezes admission and gives up the places of the
// run's users still in the queue or holding an entry window ("" entries
// are skipped), conns at a time and for at most a minute, so the run leaves
// the room as it found it.
func leaveAllConcurrently(ctx context.Context, a *client.API, adm *client.Admin, tokens []string, conns int) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := adm.SetTarget(ctx, 0); err != nil {
		fmt.Fprintf(os.Stderr, "loadtest: could not freeze admission for leaving: %v\n", err)
	}
	k := 0
	for _, t := range tokens {
		if t != "" {
			k++
		}
	}
	if k == 0 {
		return
	}
	fmt.Fprintf(os.Stderr, "loadtest: %s users leave the queue\n", report.Commas(k))
	if err := pace.ForEach(ctx, "leave", len(tokens), conns, func(i int) error {
		if tokens[i] == "" {
			return nil
		}
		code, err := a.Leave(ctx, tokens[i])
		if err == nil && code/100 != 2 {
			err = client.StatusError(code)
		}
		return err
	}); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
	}
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

// checkNoFile fails when the open-file limit cannot hold need descriptors
// (main has already lifted the soft limit to the hard one).
func checkNoFile(need int) error {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return nil // unknown: let the dials tell
	}
	if uint64(need) > l.Cur {
		return fmt.Errorf("%d streams need about %d file descriptors; the limit is %d (ulimit -n)", need-64, need, l.Cur)
	}
	return nil
}
