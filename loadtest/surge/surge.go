package surge

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"waitingroom/internal/loop"
	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/crowdnet"
	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/mint"
	"waitingroom/loadtest/internal/pace"
	"waitingroom/loadtest/internal/report"
	"waitingroom/loadtest/internal/scenario"
	"waitingroom/loadtest/internal/stream"
	"waitingroom/loadtest/internal/users"
)

// surgeOutcome is where one user of a surge ended.
type surgeOutcome uint8

const (
	surgeNotArrived  surgeOutcome = iota // the run ended before its arrival time
	surgeEnterFailed                     // enter answered an error (after retries)
	surgeWaiting                         // entered, never READY, never told why: lost
	surgeGone                            // told why: gone event or 404 not_in_queue
	surgeReady                           // READY, the order not finished (run ended)
	surgeOrdered                         // READY, then 201
	surgeOrderFailed                     // READY, then the order failed
	surgeNoShow                          // READY, never ordered: a no-show of the shopper model
	surgeAbandoned                       // stopped waiting: an abandon of the shopper model
)

// surgeUser is one user's record; only its own goroutine writes it until
// the run's WaitGroup says it is done.
type surgeUser struct {
	transport  string
	qtok       string // the queue token
	outcome    surgeOutcome
	why        string        // enter or order failure, or what the stream ended with
	enterAt    time.Duration // enter response received, after the run's start
	enterLat   time.Duration // of the successful enter
	ticket     int64         // seq of the queue token; 0 if undecodable
	immediate  bool          // READY in the enter response
	readyAt    time.Duration // READY received, after the run's start
	admittedAt time.Time     // entryExpiresAt − entryTtl (Redis clock)
	orderAt    time.Duration // order answered, after the run's start
	orderLat   time.Duration
	drops      int // streams that ended without READY or gone: the user fell back to polling
	polls      int
	pollErrors int
	group      *crowdnet.Group // its clients
	lags       []lagSample
	plan       shopperPlan
	reloaded   bool       // the plan's reload happened
	shown      []etaShown // every status shown while waiting
}

// lagSample is one pushed event's fan-out lag and when it was received.
type lagSample struct {
	at, lag time.Duration
}

// surgeCounters are live totals for the progress line.
type surgeCounters struct {
	entered, enterFailed, ready, ordered, orderFailed, gone, pollErrors, drops atomic.Int64
	noShows, abandoned, reloads                                                atomic.Int64
}

// surgeRun is one run's shared state.
type surgeRun struct {
	ctx       context.Context // the run: --max-duration or Ctrl-C ends it
	reqCtx    context.Context // requests: Ctrl-C only, so the one in flight finishes
	crowd     *crowdnet.Crowd
	product   int64
	timeout   time.Duration
	entryTTL  time.Duration
	start     time.Time
	users     []surgeUser
	plans     []shopperPlan
	cnt       surgeCounters
	samples   *roomSampler
	maxPoll   time.Duration
	minPoll   time.Duration
	maxStream int // maximum stream (re)connections per user
}

// surgeTransports are --transport's values; mix deals sse, ws, poll in turn.
var surgeTransports = []string{"sse", "ws", "poll"}

// Config is a surge's flags.
type Config struct {
	N, First, conns, PerAddr            int
	Over, maxDur, sampleEvery, slowdown time.Duration
	Idle                                time.Duration
	slowAt                              time.Duration // after the start
	slowUntil                           time.Duration // --slowdown-until: the delay removed then (0: at the end)
	rowDelay                            time.Duration // --row-delay: in force over the whole run
	limitTo                             int64         // --limit-change: targetActive…
	limitAt                             time.Duration // …from this long after the start
	Transport, Password                 string
	target, product                     int64
	Minter                              *mint.Minter
	shop                                shopperModel
}

// Flags registers a surge's flags on fs (the surge and the attack
// scenario share them; perAddr is --users-per-addr's default, shop the
// shopper model's); the returned func, called after parsing, checks them.
func Flags(fs *flag.FlagSet, perAddr int, shop shopperModel) func() (Config, error) {
	var c Config
	fs.IntVar(&c.N, "n", 10_000, "users user<first-user>… arriving")
	fs.DurationVar(&c.Over, "over", 10*time.Second, "the burst's arrivals (--burst) are spread evenly over this time")
	shopperFrom := shopperFlags(fs, shop)
	fs.StringVar(&c.Transport, "transport", "sse", "how users wait: sse, ws, poll (GET position every pollAfterMs) or mix (each in turn)")
	fs.Int64Var(&c.target, "target", 0, "targetActive during the run (0: keep the room's; the original is restored)")
	fs.DurationVar(&c.maxDur, "max-duration", 5*time.Minute, "the run ends after this long, drained or not")
	minterFromFlags := mint.Flags(fs)
	fs.StringVar(&c.Password, "password", "demo-pass", "password of the demo users (without --mint-tokens)")
	fs.IntVar(&c.First, "first-user", 1, "first user: user<k> with database id k (a freshly seeded database)")
	fs.Int64Var(&c.product, "product", 1, "product each admitted user orders")
	fs.IntVar(&c.conns, "conns", 64, "concurrent logins before the surge, and leaves after it")
	fs.IntVar(&c.PerAddr, "users-per-addr", perAddr, "deal users this many to a loopback source address 127.1.x.y, each address with its own connections (0: all users share the tool's 16 source addresses)")
	fs.DurationVar(&c.sampleEvery, "sample-every", 100*time.Millisecond, "how often the admin API is read (active, waiting)")
	fs.DurationVar(&c.slowdown, "slowdown", 0, "inject this order-path delay (PUT /admin/faults; the server needs WR_FAULT_INJECTION=on) during the run; removed at the end")
	slowAt := fs.String("slowdown-at", "50%", "when --slowdown starts: a share of --over (50%) or a time after the start (120s)")
	fs.DurationVar(&c.slowUntil, "slowdown-until", 0, "remove --slowdown this long after the start (0: at the end of the run), e.g. 45s: the downstream recovers")
	fs.DurationVar(&c.rowDelay, "row-delay", 0, "inject this delay inside each order's row lock (PUT /admin/faults rowDelay) over the whole run: orders of one product serialize on it, a hot row; removed at the end")
	limit := fs.String("limit-change", "", "change targetActive to N at time T after the start, N@T (e.g. 50@150s); the original is restored at the end")
	fs.DurationVar(&c.Idle, "idle", 45*time.Second, "a stream silent this long counts as dropped (the user then polls)")
	return func() (Config, error) {
		if c.N < 1 || c.Over < 0 || c.maxDur <= 0 || c.First < 1 || c.conns < 1 || c.sampleEvery <= 0 || c.target < 0 || c.Idle <= 0 || c.PerAddr < 0 {
			return c, errors.New("-n, --max-duration, --first-user, --conns, --sample-every and --idle must be positive; --over, --target and --users-per-addr not negative")
		}
		var err error
		if c.slowAt, err = shareOrTime(*slowAt, c.Over); err != nil || c.slowdown < 0 {
			return c, fmt.Errorf("--slowdown-at %q: want a share of --over like 50%% or a time like 120s (and --slowdown not negative)", *slowAt)
		}
		if c.rowDelay < 0 {
			return c, errors.New("--row-delay must not be negative")
		}
		if c.slowUntil != 0 && (c.slowUntil < 0 || c.slowUntil <= c.slowAt) {
			return c, fmt.Errorf("--slowdown-until %v: want a time after --slowdown-at (%v)", c.slowUntil, c.slowAt)
		}
		if c.limitTo, c.limitAt, err = parseLimitChange(*limit); err != nil {
			return c, err
		}
		switch c.Transport {
		case "sse", "ws", "poll", "mix":
		default:
			return c, fmt.Errorf("--transport %q: want sse, ws, poll or mix", c.Transport)
		}
		if c.Minter, err = minterFromFlags(); err != nil {
			return c, err
		}
		if c.shop, err = shopperFrom(); err != nil {
			return c, err
		}
		return c, scenario.CheckNoFile(c.N + 1024)
	}
}

// Run is the surge scenario: args are its flags; o gets the common ones.
func Run(ctx context.Context, o *scenario.Options, args []string) (report.Report, error) {
	fs := scenario.NewFlagSet("surge", o)
	config := Flags(fs, 0, flashSale)
	if err := o.Parse(fs, args); err != nil {
		return nil, err
	}
	cfg, err := config()
	if err != nil {
		return nil, fmt.Errorf("surge: %w", err)
	}
	s, err := New(ctx, o, cfg)
	if err != nil {
		return nil, fmt.Errorf("surge: %w", err)
	}
	defer s.Close()
	s.Prepare(ctx)
	if ctx.Err() != nil {
		rep := s.newReport()
		rep.Interrupted = true
		return rep, nil
	}
	return s.Run(ctx, nil), nil
}

// Surge is a surge ready to run, once or more (the attack scenario runs it
// twice): the room read, targetActive set, the access tokens prepared.
type Surge struct {
	o         *scenario.Options
	cfg       Config
	Adm       *client.Admin
	Leaver    *client.API // the run's leftover users leave through it
	room      client.RoomState
	target    int64 // targetActive during the runs
	tokens    string
	access    []string
	setupErrs []string
	restore   func()
}

// New reads the room and sets targetActive (close restores it).
func New(ctx context.Context, o *scenario.Options, cfg Config) (*Surge, error) {
	s := &Surge{o: o, cfg: cfg, tokens: "login", restore: func() {},
		Adm:    &client.Admin{Base: o.Admin, Token: o.AdminToken, Room: o.Room, HTTP: client.New(4, o.Timeout)},
		Leaver: &client.API{Base: o.Base, Room: o.Room, HTTP: client.New(cfg.conns, o.Timeout), Rec: measure.NewRecorder()}}
	if cfg.Minter != nil {
		s.tokens = "minted (kid " + cfg.Minter.Kid + ")"
	}
	room, err := s.Adm.RoomState(ctx)
	if err != nil {
		return nil, fmt.Errorf("the admin API is needed (active, entryTtl): %w", err)
	}
	if room.EntryTTLSeconds <= 0 {
		return nil, errors.New("GET /admin/rooms/{room} has no entryTtlSeconds: admission times cannot be derived")
	}
	s.room, s.target = room, room.TargetActive
	// A shopper thinking past the entry window would lose it: the no-shows
	// are the model's own share.
	s.cfg.shop.thinkMax = time.Duration(0.8 * room.EntryTTLSeconds * float64(time.Second))
	if cfg.target > 0 && cfg.target != room.TargetActive {
		if err := s.Adm.SetTarget(ctx, cfg.target); err != nil {
			return nil, err
		}
		s.target = cfg.target
		s.restore = func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if err := s.Adm.SetTarget(cctx, room.TargetActive); err != nil {
				fmt.Fprintf(os.Stderr, "surge: could not restore targetActive %d: %v\n", room.TargetActive, err)
			}
		}
	}
	return s, nil
}

// Close restores targetActive and closes idle connections.
func (s *Surge) Close() {
	s.restore()
	// Idle keep-alive connections would hold up a server's graceful
	// shutdown: close them when the run is over.
	s.Adm.HTTP.CloseIdleConnections()
	s.Leaver.HTTP.CloseIdleConnections()
}

// Prepare logs in (BCrypt) or mints the access tokens, before any clock
// starts: a surge measures entering and waiting, not BCrypt. A failure is
// kept for the report: the users without a token count as failed.
func (s *Surge) Prepare(ctx context.Context) {
	fmt.Fprintf(os.Stderr, "surge: preparing %s access tokens (%s)\n", report.Commas(s.cfg.N), s.tokens)
	var perr error
	s.access, perr = users.AccessTokens(ctx, s.Leaver, s.cfg.Minter, s.cfg.N, s.cfg.First, s.cfg.conns, s.cfg.Password)
	if perr != nil {
		s.setupErrs = append(s.setupErrs, perr.Error())
	}
	s.Leaver.HTTP.CloseIdleConnections()
}

// newReport is a report of this surge's settings.
func (s *Surge) newReport() *Report {
	c := s.cfg
	return &Report{Scenario: "surge", Transport: c.Transport, Base: s.o.Base, Room: s.o.Room, CPUs: runtime.NumCPU(),
		Users: c.N, OverSeconds: c.Over.Seconds(), MaxDurationSeconds: c.maxDur.Seconds(), Tokens: s.tokens,
		OriginalTarget: s.room.TargetActive, Target: s.target, EntryTTLSeconds: s.room.EntryTTLSeconds,
		UsersPerAddr: c.PerAddr, Errors: slices.Clone(s.setupErrs), Shoppers: c.shop.String(), TrickleSeconds: c.shop.trickleOver.Seconds()}
}

// sideFunc starts work beside a run (the attacks) once its clock has
// started; the returned stop is called when every user has finished (or
// the run ended) and returns when that work has stopped.
type sideFunc func(run context.Context, start time.Time) (stop func())

// Run runs the surge once: a fresh recorder and fresh connections; side,
// if not nil, runs beside it.
func (s *Surge) Run(ctx context.Context, side sideFunc) *Report {
	cfg, o, adm := s.cfg, s.o, s.Adm
	rep := s.newReport()
	rec := measure.NewRecorder()
	crowd, err := crowdnet.New(o.Base, o.Room, o.Timeout, cfg.Idle, cfg.N, cfg.PerAddr, rec)
	if err != nil {
		rep.Errors = append(rep.Errors, err.Error())
		return rep
	}
	defer crowd.CloseIdle()
	rep.SourceAddrs = crowd.Addrs()
	cleanup := context.WithoutCancel(ctx)

	run, cancelRun := context.WithTimeout(ctx, cfg.maxDur)
	defer cancelRun()
	r := &surgeRun{ctx: run, reqCtx: ctx, crowd: crowd, product: cfg.product, timeout: o.Timeout,
		entryTTL: time.Duration(s.room.EntryTTLSeconds * float64(time.Second)), users: make([]surgeUser, cfg.N), plans: cfg.shop.plans(cfg.N),
		minPoll: 100 * time.Millisecond, maxPoll: 5 * time.Second, maxStream: 3}
	readPoolWait := s.poolWait(ctx, cleanup, rep)
	before, okBefore := s.readCounters(ctx)
	r.start = time.Now()
	if cfg.slowdown > 0 {
		defer s.injectSlowdown(run, cleanup, r.start, rep)()
	}
	if cfg.rowDelay > 0 {
		defer s.injectRowDelay(run, cleanup, rep)()
	}
	if cfg.limitTo > 0 {
		s.changeLimit(run, r.start, rep)
	}
	defer readPoolWait()
	cpu0 := selfCPU()
	rep.LoadAvgStart = loadAvg()
	r.samples = startRoomSampler(run, adm, r.start, cfg.sampleEvery)
	stopProgress := r.progress(run, adm, cfg.N)
	stopSide := func() {}
	if side != nil {
		stopSide = side(run, r.start)
	}

	fmt.Fprintf(os.Stderr, "surge: %s users arrive over %v, waiting by %s; targetActive %d; at most %v\n",
		report.Commas(cfg.N), cfg.Over, cfg.Transport, rep.Target, cfg.maxDur)
	s.arrive(r)
	rep.Seconds = time.Since(r.start).Seconds()
	rep.ToolCPUSeconds = selfCPU() - cpu0
	rep.LoadAvgEnd = loadAvg()
	// The work beside the run may outlast the users (a flood's check after
	// the server's deadline); the samplers watch the server until it ends.
	stopSide()
	rep.HitMaxDuration = run.Err() != nil && ctx.Err() == nil
	rep.Interrupted = ctx.Err() != nil
	cancelRun()
	stopProgress()
	samples := r.samples.wait()
	after, okAfter := s.readCounters(cleanup)
	s.leaveRemaining(cleanup, r)
	rep.collect(r, rec, samples)
	if okBefore && okAfter {
		rep.Absent = absentFrom(before, after, int64(rep.Ready), r.entryTTL)
	}
	return rep
}

// arrive starts each user at its arrival time — the burst evenly over
// --over, the trickle at random over --trickle-over — and waits for them
// all; a user without an access token fails at once.
func (s *Surge) arrive(r *surgeRun) {
	cfg := s.cfg
	var wg sync.WaitGroup
	for i, at := range cfg.shop.arrivals(cfg.N, cfg.Over) {
		if !pace.SleepUntil(r.ctx, r.start.Add(at)) {
			break
		}
		u := &r.users[i]
		u.plan = r.plans[i]
		u.transport = cfg.Transport
		if cfg.Transport == "mix" {
			u.transport = surgeTransports[i%len(surgeTransports)]
		}
		if s.access[i] == "" {
			u.outcome, u.why = surgeEnterFailed, "no access token (login failed)"
			r.cnt.enterFailed.Add(1)
			continue
		}
		wg.Go(func() { r.user(u, r.crowd.Of(i), s.access[i]) })
	}
	wg.Wait()
}

// poolWait snapshots the pool's acquire-wait histogram; the returned func
// (deferred to the run's end) takes a second snapshot and puts the run's
// acquires and mean wait in rep. Without the first snapshot it does nothing.
func (s *Surge) poolWait(ctx, cleanup context.Context, rep *Report) func() {
	const name = "waitingroom_db_pool_acquire_wait_seconds"
	before, err := s.Adm.Histogram(ctx, name)
	return func() {
		if err != nil {
			return
		}
		mctx, cancel := context.WithTimeout(cleanup, 10*time.Second)
		defer cancel()
		if after, err := s.Adm.Histogram(mctx, name); err == nil {
			d := after.Sub(before)
			rep.PoolAcquires = int64(d.Count)
			rep.PoolWaitMeanMs = d.Mean() * 1000
			rep.PoolWaitP99Ms = d.Quantile(0.99) * 1000
		}
	}
}

// injectSlowdown sets the server's order delay to --slowdown once the
// fraction --slowdown-at of the arrival window has passed; the returned
// func (deferred to the run's end) removes it.
func (s *Surge) injectSlowdown(run, cleanup context.Context, start time.Time, rep *Report) func() {
	cfg, adm := s.cfg, s.Adm
	rep.SlowdownMs = float64(cfg.slowdown.Milliseconds())
	rep.SlowdownAtSeconds = cfg.slowAt.Seconds()
	go atTime(run, start, cfg.slowAt, fmt.Sprintf("order delay %v", cfg.slowdown),
		func(ctx context.Context) error { return adm.SetOrderDelay(ctx, cfg.slowdown) })
	if cfg.slowUntil > 0 {
		rep.SlowdownUntilSeconds = cfg.slowUntil.Seconds()
		go atTime(run, start, cfg.slowUntil, "order delay 0s",
			func(ctx context.Context) error { return adm.SetOrderDelay(ctx, 0) })
	}
	return func() {
		cctx, cancel := context.WithTimeout(cleanup, 10*time.Second)
		defer cancel()
		if err := adm.SetOrderDelay(cctx, 0); err != nil {
			fmt.Fprintf(os.Stderr, "surge: could not remove the order delay: %v\n", err)
		}
	}
}

// injectRowDelay sets the server's row-lock delay to --row-delay now; the
// returned func (deferred to the run's end) removes it.
func (s *Surge) injectRowDelay(run, cleanup context.Context, rep *Report) func() {
	rep.RowDelayMs = float64(s.cfg.rowDelay.Milliseconds())
	if err := s.Adm.SetRowDelay(run, s.cfg.rowDelay); err != nil {
		fmt.Fprintf(os.Stderr, "surge: could not set the row delay: %v\n", err)
	}
	return func() {
		cctx, cancel := context.WithTimeout(cleanup, 10*time.Second)
		defer cancel()
		if err := s.Adm.SetRowDelay(cctx, 0); err != nil {
			fmt.Fprintf(os.Stderr, "surge: could not remove the row delay: %v\n", err)
		}
	}
}

// changeLimit sets the room's targetActive to --limit-change's N at its
// time T (the original is restored with the run's other cleanup).
func (s *Surge) changeLimit(run context.Context, start time.Time, rep *Report) {
	cfg, adm := s.cfg, s.Adm
	rep.LimitChangeTo, rep.LimitChangeAtSeconds = cfg.limitTo, cfg.limitAt.Seconds()
	go atTime(run, start, cfg.limitAt, fmt.Sprintf("targetActive %d", cfg.limitTo),
		func(ctx context.Context) error { return adm.SetTarget(ctx, cfg.limitTo) })
}

// atTime makes a change (what) at after from start, unless run ends first,
// and says on stderr when it was made or why not.
func atTime(run context.Context, start time.Time, after time.Duration, what string, change func(context.Context) error) {
	if !pace.SleepUntil(run, start.Add(after)) {
		return
	}
	if err := change(run); err != nil {
		fmt.Fprintf(os.Stderr, "surge: could not set %s: %v\n", what, err)
		return
	}
	fmt.Fprintf(os.Stderr, "surge: %s from %.1fs\n", what, time.Since(start).Seconds())
}

// shareOrTime reads "50%" (or "0.5") as that share of over, and "120s" as
// a time.
func shareOrTime(v string, over time.Duration) (time.Duration, error) {
	if d, err := time.ParseDuration(v); err == nil {
		if d < 0 {
			return 0, errors.New("negative")
		}
		return d, nil
	}
	f, err := parsePercent(v)
	return time.Duration(float64(over) * f), err
}

// parseLimitChange reads --limit-change's N@T ("": none).
func parseLimitChange(v string) (n int64, at time.Duration, err error) {
	if v == "" {
		return 0, 0, nil
	}
	ns, ts, ok := strings.Cut(v, "@")
	if ok {
		n, err = strconv.ParseInt(ns, 10, 64)
	}
	if ok && err == nil {
		at, err = time.ParseDuration(ts)
	}
	if !ok || err != nil || n < 1 || at < 0 {
		return 0, 0, fmt.Errorf("--limit-change %q: want N@T with N ≥ 1 and T a time after the start, e.g. 50@150s", v)
	}
	return n, at, nil
}

// leaveRemaining has the users still in the queue leave, so the room is as
// the run found it.
func (s *Surge) leaveRemaining(cleanup context.Context, r *surgeRun) {
	var left []string
	for i := range r.users {
		if u := &r.users[i]; u.outcome == surgeWaiting || u.outcome == surgeReady || u.outcome == surgeNoShow || u.outcome == surgeAbandoned {
			left = append(left, u.qtok)
		}
	}
	if len(left) == 0 {
		return
	}
	users.LeaveAll(cleanup, s.Leaver, s.Adm, left, s.cfg.conns)
	// users.LeaveAll froze admission: the next run needs it.
	cctx, cancel := context.WithTimeout(cleanup, 10*time.Second)
	if err := s.Adm.SetTarget(cctx, s.target); err != nil {
		fmt.Fprintf(os.Stderr, "surge: could not set targetActive %d again: %v\n", s.target, err)
	}
	cancel()
}

// user is one user's goroutine: enter, wait by its transport until READY
// (or told why), order.
func (r *surgeRun) user(u *surgeUser, g *crowdnet.Group, access string) {
	u.group = g
	var st client.QueueStatus
	t0 := time.Now()
	code, err := client.WithRetry(r.ctx, func() (int, error) {
		var code int
		var err error
		t0 = time.Now()
		st, code, err = u.group.API.Enter(r.reqCtx, access)
		return code, err
	})
	if err == nil && code != http.StatusOK {
		err = client.StatusError(code)
	}
	if err != nil {
		if r.reqCtx.Err() == nil {
			u.outcome, u.why = surgeEnterFailed, "enter: "+stream.WhyEnded(err)
			r.cnt.enterFailed.Add(1)
		}
		return
	}
	now := time.Now()
	u.enterAt, u.enterLat = now.Sub(r.start), now.Sub(t0)
	u.qtok = st.QueueToken
	u.ticket, _ = ticketOf(st.QueueToken)
	u.show(u.enterAt, st.Status, st.Position, st.ETASeconds, st.ETAKnown)
	u.outcome = surgeWaiting
	r.cnt.entered.Add(1)

	if st.Status == "READY" {
		u.immediate = true
	} else {
		st = r.wait(u, st)
	}
	if st.Status != "READY" {
		return
	}
	u.readyAt = time.Since(r.start)
	if st.EntryExpiresAt != nil {
		u.admittedAt = st.EntryExpiresAt.Add(-r.entryTTL)
	}
	u.outcome = surgeReady
	r.cnt.ready.Add(1)
	if u.plan.noShow {
		u.outcome = surgeNoShow
		r.cnt.noShows.Add(1)
		return
	}
	if !pace.Sleep(r.ctx, u.plan.think) {
		return
	}
	// An order is retried only when the server answered 429 or 503 (the
	// entry token is then restored): after no answer it may have been
	// placed, and a retry would meet a consumed token.
	t1 := time.Now()
	code, err = client.WithRetry(r.reqCtx, func() (int, error) {
		code, err := u.group.API.Order(r.reqCtx, u.qtok, st.EntryToken, r.product)
		if code == measure.NoResponse {
			return http.StatusBadGateway, err // not retried
		}
		return code, err
	})
	if code == http.StatusBadGateway && err != nil {
		code = measure.NoResponse
	}
	u.orderAt, u.orderLat = time.Since(r.start), time.Since(t1)
	switch {
	case code == http.StatusCreated:
		u.outcome = surgeOrdered
		r.cnt.ordered.Add(1)
	case r.reqCtx.Err() == nil:
		u.outcome, u.why = surgeOrderFailed, "order: "+stream.WhyEnded(client.OrElse(err, client.StatusError(code)))
		r.cnt.orderFailed.Add(1)
	}
}

// progress shows the run: one line refreshed in place on a terminal, else
// a plain line every 5 s. The returned func stops it (and ends the line).
func (r *surgeRun) progress(ctx context.Context, adm *client.Admin, n int) (stop func()) {
	tty := isTerminal(os.Stderr)
	every := 5 * time.Second
	if tty {
		every = 500 * time.Millisecond
	}
	done := make(chan struct{})
	quit, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(done)
		var last [3]int64
		lastAt := time.Now()
		loop.Every(quit, every, func(context.Context) {
			c := &r.cnt
			cur := [3]int64{c.entered.Load(), c.ready.Load(), c.ordered.Load()}
			dt := time.Since(lastAt).Seconds()
			var rate [3]float64
			for k := range cur {
				rate[k] = float64(cur[k]-last[k]) / dt
			}
			last, lastAt = cur, time.Now()
			finished := c.ready.Load() + c.gone.Load() + c.abandoned.Load()
			errs := c.enterFailed.Load() + c.orderFailed.Load() + c.pollErrors.Load()
			line := fmt.Sprintf("%5.1fs  entered %s/%s  waiting %s  admitted %s  ordered %s  | %.0f enter/s %.0f admit/s %.0f order/s | errors %d  drops %d",
				time.Since(r.start).Seconds(), report.Commas(int(cur[0])), report.Commas(n), report.Commas(int(cur[0]-finished)), report.Commas(int(cur[1])),
				report.Commas(int(cur[2])), rate[0], rate[1], rate[2], errs, c.drops.Load())
			if s, ok := r.samples.last(); ok {
				line += fmt.Sprintf("  | room active %d/%d", s.Active, s.Target)
			}
			if tty {
				fmt.Fprint(os.Stderr, "\r\033[K"+line)
			} else {
				fmt.Fprintln(os.Stderr, line)
			}
		})
		if tty {
			fmt.Fprintln(os.Stderr)
		}
	}()
	return sync.OnceFunc(func() { cancel(); <-done })
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// selfCPU is the CPU time (user + system) this process has used, in
// seconds: the load generator's share of the machine.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// loadAvg is the machine's 1-minute load average ("" where /proc/loadavg
// is not readable): on a shared machine it tells how much else ran.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// parsePercent reads "50%" (or "0.5") as a share from 0 to 1.
func parsePercent(s string) (float64, error) {
	s = strings.TrimSpace(s)
	div := 1.0
	if strings.HasSuffix(s, "%") {
		s, div = strings.TrimSuffix(s, "%"), 100
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f/div < 0 || f/div > 1 {
		return 0, fmt.Errorf("%q is not a share from 0%% to 100%%", s)
	}
	return f / div, nil
}
