package attack

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/pace"
	"waitingroom/loadtest/internal/report"
	"waitingroom/loadtest/internal/scenario"
	"waitingroom/loadtest/internal/stream"
	"waitingroom/loadtest/surge"
)

// attackNames are the attacks --attacks chooses from.
var attackNames = []string{"stuffing", "storm", "idle", "streams", "bomb", "cross-site"}

// attackConfig is the attack scenario's own flags.
type attackConfig struct {
	on          map[string]bool
	for_        time.Duration // the attack window (0: --over)
	firstUser   int           // the attackers' first account (0: after the crowd's)
	stuffing    int
	stuffAddrs  int
	stuffConns  int
	stormTokens int
	stormMax    int
	idleSockets int
	deadline    time.Duration
	streams     int
	maxStreams  int
	bombs       int
	bombMiB     int
	crossSite   int
	rssSlackMiB float64
	drainWait   time.Duration
}

func attackFlags(fs *flag.FlagSet) func() (attackConfig, error) {
	var c attackConfig
	list := fs.String("attacks", "all", "attacks to run beside the surge, comma-separated: "+strings.Join(attackNames, ",")+", all or none")
	fs.DurationVar(&c.for_, "attack-for", 0, "the attack window from the surge's start: the storm runs this long, bombs and cross-site requests are spread over it (0: --over, at least 1s)")
	fs.IntVar(&c.firstUser, "attack-first-user", 0, "the attackers' first account user<k> (0: --first-user + -n); they use 3 + --storm-tokens accounts: the stuffing's target, the cross-site victim, the stream flooder, the storm's")
	fs.IntVar(&c.stuffing, "stuffing", 300, "credential stuffing: wrong-password logins, every 4th to the attacked account, the rest over the crowd's loginIds")
	fs.IntVar(&c.stuffAddrs, "stuffing-addrs", 3, "credential stuffing: source addresses (127.2.0.1 …)")
	fs.IntVar(&c.stuffConns, "stuffing-conns", 4, "credential stuffing: concurrent attempts")
	fs.IntVar(&c.stormTokens, "storm-tokens", 3, "refresh storm: queue tokens polling their position in a closed loop (from 127.2.1.1)")
	fs.IntVar(&c.stormMax, "storm-requests", 200_000, "refresh storm: at most this many requests in all")
	fs.IntVar(&c.idleSockets, "idle-sockets", 400, "idle-socket flood: sockets from 127.2.2.1, half silent, half with half a request line")
	fs.DurationVar(&c.deadline, "conn-deadline", 5*time.Second, "the server's deadline for a connection's first complete request: idle sockets open 2 s past it count as held")
	fs.IntVar(&c.streams, "stream-flood", 30, "stream flood: SSE streams one user opens with one queue token (from 127.2.3.1)")
	fs.IntVar(&c.maxStreams, "max-streams", 3, "stream flood: the server's cap of concurrent streams per user and room, the bar for the streams left open")
	fs.IntVar(&c.bombs, "bombs", 3, "decompression bombs (Content-Encoding: gzip, gzip) to login, orders and the admin API in turn (from 127.2.4.1)")
	fs.IntVar(&c.bombMiB, "bomb-mib", 256, "what each bomb inflates to, MiB")
	fs.IntVar(&c.crossSite, "cross-site", 3, "cross-site requests of each kind: WebSocket handshakes and form POSTs to leave with the victim's cookie and Origin "+evilOrigin+" (from 127.2.5.1)")
	fs.Float64Var(&c.rssSlackMiB, "rss-slack", 64, "the bar for server RSS: the attacked run's max at most the baseline's max + this many MiB")
	fs.DurationVar(&c.drainWait, "drain-wait", 30*time.Second, "between the runs, wait at most this long for the room to drain (nobody waiting or active)")
	return func() (attackConfig, error) {
		c.on = map[string]bool{}
		for _, a := range strings.Split(*list, ",") {
			switch a = strings.TrimSpace(a); {
			case a == "all":
				for _, n := range attackNames {
					c.on[n] = true
				}
			case a == "none" || a == "":
			case slices.Contains(attackNames, a):
				c.on[a] = true
			default:
				return c, fmt.Errorf("--attacks: unknown attack %q (want %s, all or none)", a, strings.Join(attackNames, ","))
			}
		}
		if c.for_ < 0 || c.firstUser < 0 || c.stuffing < 0 || c.stuffAddrs < 1 || c.stuffAddrs > 250 || c.stuffConns < 1 || c.stormTokens < 0 ||
			c.stormMax < 0 || c.idleSockets < 0 || c.deadline <= 0 || c.streams < 0 || c.maxStreams < 0 || c.bombs < 0 || c.bombMiB < 1 ||
			c.crossSite < 0 || c.rssSlackMiB < 0 || c.drainWait < 0 {
			return c, errors.New("attack flags: counts and durations must not be negative; --stuffing-addrs 1-250, --stuffing-conns and --bomb-mib at least 1, --conn-deadline positive")
		}
		// An intensity of 0 turns an attack off, as leaving it out of --attacks does.
		for name, n := range map[string]int{"stuffing": c.stuffing, "storm": c.stormTokens, "idle": c.idleSockets, "streams": c.streams, "bomb": c.bombs, "cross-site": c.crossSite} {
			if n == 0 {
				delete(c.on, name)
			}
		}
		return c, nil
	}
}

// Run is the attack scenario: the surge twice on the same room —
// first alone (the baseline), then, once the room has drained, with the
// attacks beside it — and the legitimate users' figures of both side by
// side with what each attack achieved.
func Run(ctx context.Context, o *scenario.Options, args []string) (report.Report, error) {
	fs := scenario.NewFlagSet("attack", o)
	config := surge.Flags(fs, 4, surge.InstantShoppers)
	attackConfigOf := attackFlags(fs)
	if err := o.Parse(fs, args); err != nil {
		return nil, err
	}
	cfg, err := config()
	if err != nil {
		return nil, fmt.Errorf("attack: %w", err)
	}
	ac, err := attackConfigOf()
	if err != nil {
		return nil, fmt.Errorf("attack: %w", err)
	}
	if cfg.Minter == nil {
		return nil, errors.New("attack: --mint-tokens is needed (with --jwt-secret or $WR_JWT_SECRET): the crowd must cost no BCrypt, so that every BCrypt verification counted is the attackers'")
	}
	if cfg.PerAddr < 1 {
		return nil, errors.New("attack: --users-per-addr must be at least 1: the crowd comes from many addresses, the attackers from others")
	}
	if err := client.CheckLoopback(o.Base); err != nil {
		return nil, fmt.Errorf("attack: %w", err)
	}
	if ac.for_ == 0 {
		ac.for_ = max(cfg.Over, time.Second)
	}
	if ac.firstUser == 0 {
		ac.firstUser = cfg.First + cfg.N
	}
	s, err := surge.New(ctx, o, cfg)
	if err != nil {
		return nil, fmt.Errorf("attack: %w", err)
	}
	defer s.Close()
	s.Prepare(ctx)
	rep := newAttackReport(o, cfg, ac)
	if ctx.Err() != nil {
		rep.Interrupted = true
		return rep, nil
	}

	fmt.Fprintln(os.Stderr, "attack: the baseline — the surge alone")
	base := &attackRun{o: o, cfg: cfg, ac: ac, s: s, baseline: true}
	rep.Baseline = s.Run(ctx, base.side)
	rep.BcryptBaseline = base.bcrypt
	rep.Baseline.Scenario = "surge (baseline)"
	if ctx.Err() != nil {
		rep.Interrupted = true
		rep.finish()
		return rep, nil
	}
	if err := waitDrained(ctx, s.Adm, ac.drainWait); err != nil {
		rep.Notes = append(rep.Notes, "before the attacked run: "+err.Error())
	}
	fmt.Fprintf(os.Stderr, "attack: the same surge with the attacks beside it: %s\n", rep.AttacksOn)
	ar := &attackRun{o: o, cfg: cfg, ac: ac, s: s, out: rep}
	rep.Attack = s.Run(ctx, ar.side)
	rep.Attack.Scenario = "surge (under attack)"
	rep.BcryptAttack = ar.bcrypt
	rep.Interrupted = ctx.Err() != nil
	rep.finish()
	return rep, nil
}

// waitDrained waits until the room has nobody waiting or active, at most d.
func waitDrained(ctx context.Context, adm *client.Admin, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		st, err := adm.RoomState(ctx)
		if err == nil && st.Waiting == 0 && st.Active == 0 {
			return nil
		}
		if time.Now().After(deadline) || !pace.Sleep(ctx, 250*time.Millisecond) {
			if err != nil {
				return fmt.Errorf("the room's state: %w", err)
			}
			return fmt.Errorf("the room had not drained after %v: %d waiting, %d active", d, st.Waiting, st.Active)
		}
	}
}

// attackRun is one run's work beside the surge: for the baseline only the
// BCrypt count, for the attacked run the attacks.
type attackRun struct {
	o        *scenario.Options
	cfg      surge.Config
	ac       attackConfig
	s        *surge.Surge
	baseline bool
	out      *attackReport
	bcrypt   float64 // Δ waitingroom_bcrypt_seconds_count over the run
}

// side is the surge's sideFunc: it starts the attacks with the run's clock
// and its stop waits for them (each is bounded by count and time; the
// floods end after their checks), has the attackers leave the queue, and
// reads the BCrypt count.
func (ar *attackRun) side(run context.Context, start time.Time) func() {
	stopBcrypt := ar.countBcrypt(run)
	if ar.baseline || len(ar.ac.on) == 0 {
		return stopBcrypt
	}
	x := ar.launch(run, start)
	return func() {
		x.wait()
		stopBcrypt()
		x.leaveQueue(ar.s.Leaver)
	}
}

// countBcrypt reads waitingroom_bcrypt_seconds_count now; the returned
// stop reads it again and puts the difference in ar.bcrypt (left 0 when
// either read fails).
func (ar *attackRun) countBcrypt(run context.Context) (stop func()) {
	adm := ar.s.Adm
	b0, errText := client.ScrapeNames(run, adm, measure.MetricBcrypt)
	bcryptOK := errText == ""
	return func() {
		if !bcryptOK {
			return
		}
		mctx, cancel := context.WithTimeout(context.WithoutCancel(run), 10*time.Second)
		defer cancel()
		if b1, errText := client.ScrapeNames(mctx, adm, measure.MetricBcrypt); errText == "" {
			ar.bcrypt = b1[measure.MetricBcrypt] - b0[measure.MetricBcrypt]
		}
	}
}

// attacks is one run's attacks in flight: the bounded ones (they end by
// themselves), the held ones (floods that hold what they got until wait
// ends them), and the queue tokens of the attackers who entered.
type attacks struct {
	ar  *attackRun
	a   *attacker
	run context.Context
	// reqCtx: Ctrl-C only, so the owner's login and the victim's check
	// finish when the run ends; holds: the floods' holding, ended by wait.
	reqCtx, holds context.Context
	endHolds      context.CancelFunc
	bounded, held sync.WaitGroup
	floodChecked  chan struct{} // closed once the stream flood has counted
	mu            sync.Mutex
	leave         []string // queue tokens of attackers in the queue
}

// launch starts every attack that is on, from its own addresses.
func (ar *attackRun) launch(run context.Context, start time.Time) *attacks {
	o, ac, cfg, rep := ar.o, ar.ac, ar.cfg, ar.out
	x := &attacks{ar: ar, run: run, reqCtx: context.WithoutCancel(run), floodChecked: make(chan struct{}),
		a: &attacker{base: o.Base, admin: o.Admin, adminToken: o.AdminToken, room: o.Room, timeout: o.Timeout, rec: measure.NewRecorder()}}
	x.holds, x.endHolds = context.WithCancel(run)
	a := x.a
	if ac.on["stuffing"] {
		owner := "user" + fmt.Sprint(ac.firstUser)
		x.bounded.Go(func() {
			rep.Stuffing = a.stuffing(run, x.reqCtx, ac.stuffing, ac.stuffAddrs, ac.stuffConns, owner, cfg.Password, cfg.First, cfg.N)
		})
	}
	if ac.on["cross-site"] {
		x.bounded.Go(x.crossSite)
	}
	// The stream flooder's token also carries the bomb to orders.
	var floodTok string
	if ac.on["streams"] || ac.on["bomb"] {
		floodTok = x.enterFlooder()
	}
	if ac.on["streams"] {
		x.held.Go(func() {
			rep.StreamFlood = a.streamFlood(x.holds, floodTok, ac.streams, cfg.Idle, x.floodChecked)
		})
	} else {
		close(x.floodChecked)
	}
	if ac.on["idle"] {
		x.bounded.Go(func() { rep.IdleFlood = a.idleFlood(run, ac.idleSockets, ac.deadline) })
	}
	if ac.on["bomb"] {
		x.bounded.Go(func() { rep.Bombs = a.bombs(run, ar.s.Adm, ac.bombs, ac.bombMiB, ac.for_, floodTok) })
	}
	if ac.on["storm"] {
		x.bounded.Go(func() { x.storm(start) })
	}
	return x
}

// access is the access token of the k-th attacker account ("" if it cannot
// be minted).
func (x *attacks) access(k int) string {
	tok, err := x.ar.cfg.Minter.Access(int64(x.ar.ac.firstUser + k))
	if err != nil {
		return ""
	}
	return tok
}

// keep remembers an attacker's queue token, to leave at the end.
func (x *attacks) keep(tok string) {
	x.mu.Lock()
	x.leave = append(x.leave, tok)
	x.mu.Unlock()
}

// crossSite runs the cross-site requests a third into the window: the
// victim waits in the queue while the forged requests come.
func (x *attacks) crossSite() {
	if !pace.Sleep(x.run, x.ar.ac.for_/3) {
		return
	}
	rep := x.ar.out
	rep.CrossSite = x.a.crossSite(x.run, x.access(1), x.ar.ac.crossSite)
	if rep.CrossSite.qtok != "" {
		x.keep(rep.CrossSite.qtok)
	}
}

// enterFlooder enters the stream flooder and returns its queue token (""
// when it could not enter; a note says why).
func (x *attacks) enterFlooder() string {
	cl := x.a.client(streamAddr, 1)
	tok, _, err := x.a.enter(x.run, cl, x.access(2))
	cl.HTTP.CloseIdleConnections()
	if err != nil {
		x.ar.out.Notes = append(x.ar.out.Notes, "the stream flooder could not enter: "+stream.WhyEnded(err))
		return ""
	}
	x.keep(tok)
	return tok
}

// storm enters the storm's tokens when the crowd has arrived, at the back
// of the queue — a scalper refreshing while it waits — and polls with them.
// (At the front they would be READY at once, and READY asks for no pause:
// the poll limit, paced by pollAfterMs, lets READY polls through.)
func (x *attacks) storm(start time.Time) {
	ac := x.ar.ac
	if !pace.SleepUntil(x.run, start.Add(x.ar.cfg.Over)) {
		return
	}
	cl := x.a.client(stormAddr, ac.stormTokens)
	var toks []string
	var why string
	for k := range ac.stormTokens {
		tok, _, err := x.a.enter(x.run, cl, x.access(3+k))
		if err != nil {
			why = stream.WhyEnded(err)
			continue
		}
		toks = append(toks, tok)
		x.keep(tok)
	}
	cl.HTTP.CloseIdleConnections()
	x.ar.out.Storm = x.a.storm(x.run, toks, ac.for_, ac.stormMax)
	x.ar.out.Storm.EnterFailure = why
}

// wait waits for the bounded attacks, then for the stream flood's count
// (or the run's end), then ends the floods' holding and waits for them.
func (x *attacks) wait() {
	x.bounded.Wait()
	select {
	case <-x.floodChecked:
	case <-x.run.Done():
	}
	x.endHolds()
	x.held.Wait()
}

// leaveQueue has the attackers who entered leave: the room is as the run
// found it.
func (x *attacks) leaveQueue(l *client.API) {
	if len(x.leave) == 0 {
		return
	}
	lctx, cancel := context.WithTimeout(x.reqCtx, time.Minute)
	defer cancel()
	_ = pace.ForEach(lctx, "attackers leave", len(x.leave), 4, func(i int) error {
		_, err := l.Leave(lctx, x.leave[i])
		return err
	})
}
