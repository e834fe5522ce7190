package crowd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"waitingroom/internal/loop"
	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/crowdnet"
	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/mint"
	"waitingroom/loadtest/internal/pace"
	"waitingroom/loadtest/internal/report"
	"waitingroom/loadtest/internal/scenario"
)

// crowdConfig is the crowd scenario's flags.
type crowdConfig struct {
	waiting, first, users, products, perAddr, loginConns int
	ramp, gap, think, duration, waitReady, downAfter     time.Duration
	idle                                                 time.Duration
	leave                                                float64
	transport, password                                  string
	mt                                                   *mint.Minter
	// gateway is --gateway: "" for the classic crowd (logins, orders at
	// /api/v1), else the protected request ("GET /checkout/") an admitted
	// anonymous visitor makes through a gateway-mode server.
	gateway *gatewayVisit
}

// crowdFlags registers the crowd's flags on fs; the returned func, called
// after parsing, checks them.
func crowdFlags(fs *flag.FlagSet) func() (crowdConfig, error) {
	var c crowdConfig
	fs.IntVar(&c.waiting, "waiting", 300, "shoppers kept waiting in the queue: each one admitted, gone or giving up is replaced by a new arrival")
	fs.DurationVar(&c.ramp, "ramp", 10*time.Second, "the first --waiting shoppers arrive evenly over this time")
	fs.DurationVar(&c.gap, "arrival-gap", time.Second, "mean pause (exponential) before a shopper's replacement arrives")
	fs.DurationVar(&c.think, "think", 6*time.Second, "mean time from READY to the order (each shopper's between half and 1.5 times this)")
	fs.Float64Var(&c.leave, "leave", 0.05, "share of shoppers who give up and leave the queue while waiting (after 10-90 s)")
	fs.StringVar(&c.transport, "transport", "mix", "how shoppers wait: sse, ws, poll (GET position every pollAfterMs) or mix (each in turn)")
	fs.IntVar(&c.first, "first-user", 1001, "the crowd's first demo user: user<k> with database id k (user1 … user<k-1> are left for people)")
	fs.IntVar(&c.users, "users", 9000, "demo users the crowd cycles through, from --first-user")
	fs.IntVar(&c.products, "products", 3, "each order is for one of products 1 … N")
	fs.DurationVar(&c.duration, "duration", 0, "stop after this long (0: run until interrupted)")
	fs.DurationVar(&c.waitReady, "wait-ready", 0, "first wait up to this long for the management port's /readyz (0: start at once)")
	fs.DurationVar(&c.downAfter, "stop-when-down", 15*time.Second, "stop when the public port has not answered for this long (0: never)")
	fs.IntVar(&c.perAddr, "users-per-addr", 4, "deal shoppers this many to a loopback source address 127.1.x.y, each with its own connections (0, or a target off loopback: the tool's shared addresses)")
	minterFromFlags := mint.Flags(fs)
	fs.StringVar(&c.password, "password", "demo-pass", "password of the demo users, without --mint-tokens (each logs in once; its token is kept)")
	fs.IntVar(&c.loginConns, "login-conns", 2, "logins at a time without --mint-tokens (BCrypt is the server's CPU)")
	fs.DurationVar(&c.idle, "idle", 45*time.Second, "a stream silent this long counts as dropped (the shopper then polls)")
	gateway := fs.String("gateway", "", `gateway mode: shoppers are anonymous visitors who enter under /_wr/ (solving the proof of work when asked) and, once admitted, make this protected request through the gateway instead of an order, e.g. "GET /checkout/"`)
	return func() (crowdConfig, error) {
		if *gateway != "" {
			v, err := parseGatewayVisit(*gateway)
			if err != nil {
				return c, err
			}
			c.gateway = v
		}
		if c.waiting < 1 || c.first < 1 || c.users < c.waiting || c.products < 1 || c.loginConns < 1 || c.idle <= 0 {
			return c, errors.New("--waiting, --first-user, --products, --login-conns and --idle must be positive, --users at least --waiting")
		}
		if c.ramp < 0 || c.gap < 0 || c.think < 0 || c.duration < 0 || c.waitReady < 0 || c.downAfter < 0 || c.perAddr < 0 || c.leave < 0 || c.leave > 1 {
			return c, errors.New("durations and --users-per-addr must not be negative; --leave is a share from 0 to 1")
		}
		switch c.transport {
		case "sse", "ws", "poll", "mix":
		default:
			return c, fmt.Errorf("--transport %q: want sse, ws, poll or mix", c.transport)
		}
		var err error
		if c.mt, err = minterFromFlags(); err != nil {
			return c, err
		}
		return c, scenario.CheckNoFile(2*c.waiting + 1024)
	}
}

// Run is the crowd scenario: args are its flags; o gets the common ones.
func Run(ctx context.Context, o *scenario.Options, args []string) (report.Report, error) {
	fs := scenario.NewFlagSet("crowd", o)
	config := crowdFlags(fs)
	if err := o.Parse(fs, args); err != nil {
		return nil, err
	}
	cfg, err := config()
	if err != nil {
		return nil, fmt.Errorf("crowd: %w", err)
	}
	if cfg.waitReady > 0 {
		if err := client.AwaitReady(ctx, o.Admin, cfg.waitReady); err != nil {
			return nil, fmt.Errorf("crowd: %w", err)
		}
	}
	if cfg.perAddr > 0 && client.CheckLoopback(o.Base) != nil {
		cfg.perAddr = 0 // 127.1.x.y reaches only a loopback target
	}
	r, err := newCrowdRun(o, cfg)
	if err != nil {
		return nil, fmt.Errorf("crowd: %w", err)
	}
	return r.run(ctx), nil
}

// crowdCounters are the run's totals, live.
type crowdCounters struct {
	arrived, entered, enterFailed, admitted, ordered, orderFailed atomic.Int64
	gaveUp, gone, sentHome, drops, pollErrors, leaveFailed        atomic.Int64
	waiting                                                       atomic.Int64 // shoppers waiting now
}

// crowdRun is one run's shared state.
type crowdRun struct {
	o      *scenario.Options
	cfg    crowdConfig
	ctx    context.Context // the run: its end sends every shopper home
	start  time.Time
	crowd  *crowdnet.Crowd // clients by source address, user index i → crowd.of(i)
	adm    *client.Admin   // room state for the progress line (when a token is given)
	tokens *accessSource   // minted or logged-in access tokens; nil in gateway mode
	pool   chan int        // free user indexes, least recently used first
	wg     sync.WaitGroup  // every shopper's goroutine
	cnt    crowdCounters
	waits  *waitSample
	why    *tally            // why enters and orders failed
	rec    *measure.Recorder // drained into codes by the progress loop
	codes  *codeTotals
}

func newCrowdRun(o *scenario.Options, cfg crowdConfig) (*crowdRun, error) {
	rec := measure.NewRecorder()
	c, err := crowdnet.New(cfg.apiBase(o.Base), o.Room, o.Timeout, cfg.idle, cfg.users, cfg.perAddr, rec)
	if err != nil {
		return nil, err
	}
	r := &crowdRun{o: o, cfg: cfg, crowd: c, pool: make(chan int, cfg.users), waits: newWaitSample(2048),
		why: newTally(), rec: rec, codes: newCodeTotals()}
	if cfg.gateway == nil { // gateway mode's visitors are anonymous: no tokens
		r.tokens = newAccessSource(cfg.mt, cfg.first, cfg.password, cfg.loginConns)
	}
	if o.AdminToken != "" {
		r.adm = &client.Admin{Base: o.Admin, Token: o.AdminToken, Room: o.Room, HTTP: client.New(2, o.Timeout)}
	}
	for i := range cfg.users {
		r.pool <- i
	}
	return r, nil
}

// run keeps the crowd until ctx ends, --duration passes or the server
// stops answering, then waits for every shopper to go home.
func (r *crowdRun) run(ctx context.Context) *crowdReport {
	run, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if r.cfg.duration > 0 {
		var stop context.CancelFunc
		run, stop = context.WithTimeoutCause(run, r.cfg.duration, errDurationOver)
		defer stop()
	}
	r.ctx, r.start = run, time.Now()
	if r.cfg.downAfter > 0 {
		go r.watchServer(cancel)
	}
	fmt.Fprintf(os.Stderr, "crowd: keeping %s shoppers waiting in room %s (user%d … user%d, tokens %s), waiting by %s, think %v; Ctrl-C ends it\n",
		report.Commas(r.cfg.waiting), r.o.Room, r.cfg.first, r.cfg.first+r.cfg.users-1, r.tokens.kind(), r.cfg.transport, r.cfg.think)
	stopProgress := r.progress()
	for k := range r.cfg.waiting {
		at := time.Duration(int64(r.cfg.ramp) * int64(k) / int64(r.cfg.waiting))
		r.wg.Go(func() { r.slot(at) })
	}
	<-run.Done()
	r.wg.Wait()
	stopProgress()
	r.crowd.CloseIdle()
	return r.newReport(ctx, context.Cause(run))
}

// errDurationOver ends a run at --duration; errServerGone when the server
// stopped answering.
var (
	errDurationOver = errors.New("--duration over")
	errServerGone   = errors.New("the server stopped answering")
)

// slot is one place in the crowd: after at, a shopper arrives; when they
// are no longer waiting (admitted, gone, gave up) another arrives after a
// pause, until the run ends.
func (r *crowdRun) slot(at time.Duration) {
	if !pace.SleepUntil(r.ctx, r.start.Add(at)) {
		return
	}
	for r.ctx.Err() == nil {
		pause := r.expGap()
		if !r.arrive() {
			pause = max(pause, 5*time.Second) + rand.N(time.Second) // a refused enter: do not hammer
		}
		pace.Sleep(r.ctx, pause)
	}
}

// expGap is a pause drawn from the exponential distribution of mean
// --arrival-gap, at most five times the mean.
func (r *crowdRun) expGap() time.Duration {
	return min(time.Duration(rand.ExpFloat64()*float64(r.cfg.gap)), 5*r.cfg.gap)
}

// take is a free user index, or false when the run ended first.
func (r *crowdRun) take() (int, bool) {
	select {
	case i := <-r.pool:
		return i, true
	case <-r.ctx.Done():
		return 0, false
	}
}

// free puts user index i back at the end of the pool.
func (r *crowdRun) free(i int) { r.pool <- i }

// watchServer ends the run (cause errServerGone) once the public port has
// not answered for --stop-when-down: the crowd does not outlive the server
// it was started for.
func (r *crowdRun) watchServer(cancel context.CancelCauseFunc) {
	hc := &http.Client{Timeout: 2 * time.Second}
	lastOK := time.Now()
	loop.Every(r.ctx, time.Second, func(ctx context.Context) {
		// In gateway mode the waiting room's own page: the origin's would
		// send the origin a request a second that no visitor made.
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.cfg.apiBase(r.o.Base)+"/", nil)
		if err != nil {
			return
		}
		if res, err := hc.Do(req); err == nil {
			res.Body.Close()
			lastOK = time.Now()
			return
		}
		if ctx.Err() == nil && time.Since(lastOK) >= r.cfg.downAfter {
			fmt.Fprintf(os.Stderr, "crowd: %s has not answered for %v: stopping\n", r.o.Base, r.cfg.downAfter)
			cancel(errServerGone)
		}
	})
}
