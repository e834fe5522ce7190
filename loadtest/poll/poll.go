package poll

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/mint"
	"waitingroom/loadtest/internal/pace"
	"waitingroom/loadtest/internal/report"
	"waitingroom/loadtest/internal/scenario"
	"waitingroom/loadtest/internal/users"
)

// maxRequests caps one closed-loop worker's requests in one phase, so the
// loop ends by count even if the clock never stopped it.
const maxRequests = 1_000_000

// pollReport is what the poll scenario measured. A phase is nil when Ctrl-C
// came before it.
type pollReport struct {
	Scenario      string       `json:"scenario"`
	Base          string       `json:"base"`
	Room          string       `json:"room"`
	CPUs          int          `json:"cpus"`
	Users         int          `json:"users"`
	Ahead         int          `json:"ahead"`
	TargetActive  int64        `json:"targetActive"` // restored after the run; 0 during it
	BodyBytes     int          `json:"bodyBytes"`
	BaselineBytes int          `json:"baselineBodyBytes"`
	BaselineWhere string       `json:"baselineWhere"` // "in-process" (inside the load tool) or "own process" (--baseline-process)
	Mode          string       `json:"mode"`          // closed (as fast as answered) or open (each user at its band's pace)
	RedisShared   bool         `json:"redisShared"`   // --redis given: Redis figures include anything else it served meanwhile
	Server        *phase       `json:"server,omitempty"`
	Baseline      *phase       `json:"baseline,omitempty"`
	Login         *phase       `json:"login,omitempty"`
	Ratio         float64      `json:"ratio,omitempty"`               // server ÷ baseline req/s; the bar is ≥ 0.5
	AnsweredRatio float64      `json:"answeredRatio,omitempty"`       // the same over answers (2xx and 429), when some were 429
	CostRatio     float64      `json:"perRequestCostRatio,omitempty"` // (1/login req/s) ÷ (1/poll req/s)
	Enter         *enterPhases `json:"enter,omitempty"`               // --enter
	Limit         *limitPhases `json:"limit,omitempty"`               // --limit
	Interrupted   bool         `json:"interrupted"`
}

// phase is one measurement against one target: closed loop (Conns
// connections) or open loop (Conns users at their pace).
type phase struct {
	Target  string  `json:"target"`
	Conns   int     `json:"conns"`
	Seconds float64 `json:"seconds"`
	OK      int     `json:"ok"`  // 2xx answers
	RPS     float64 `json:"rps"` // OK ÷ Seconds
	// Answered counts 2xx and 429: a refused poll runs the whole poll
	// path (status, then the pace), so it is an answer of the handler.
	Answered    int     `json:"answered"`
	AnsweredRPS float64 `json:"answeredRps"`
	// OfferedRPS (open loop): the rate the users were asked to poll at,
	// Σ 1 ÷ pollAfter over the users' last answers.
	OfferedRPS float64            `json:"offeredRps,omitempty"`
	Latency    measure.Summary    `json:"latency"`
	Redis      *measure.RedisCost `json:"redis,omitempty"` // --redis
	// ServerCPUPerReqMicros is the server process's CPU time over the
	// phase (its /metrics process_cpu_seconds_total) per answer.
	ServerCPUPerReqMicros float64 `json:"serverCpuPerRequestUs,omitempty"`
}

// summarize is the phase of target from its requests' summary over
// seconds of measurement.
func summarize(target string, conns int, s measure.Summary, d time.Duration) *phase {
	p := &phase{Target: target, Conns: conns, Seconds: d.Seconds(), Latency: s}
	for code, n := range s.Codes {
		if code/100 == 2 {
			p.OK += n
		}
		if code/100 == 2 || code == http.StatusTooManyRequests {
			p.Answered += n
		}
	}
	if p.Seconds > 0 {
		p.RPS, p.AnsweredRPS = float64(p.OK)/p.Seconds, float64(p.Answered)/p.Seconds
	}
	return p
}

// reqFunc builds worker w's i-th request.
type reqFunc func(ctx context.Context, w, i int) (*http.Request, error)

// pollConfig is the poll scenario's flags.
type pollConfig struct {
	conns, users, ahead, loginConns int
	dur, warm, loginDur, spread     time.Duration
	password                        string
	mt                              *mint.Minter // nil: log in
	open                            bool         // --mode open
	rs                              *measure.RedisStats
	enter                           enterConfig
	ownProcess                      bool // --baseline-process
	limit                           limitConfig
}

// parsePollFlags reads and checks the poll scenario's flags.
func parsePollFlags(o *scenario.Options, args []string) (pollConfig, error) {
	fs := scenario.NewFlagSet("poll", o)
	conns := fs.Int("conns", 64, "closed-loop connections polling each target")
	dur := fs.Duration("duration", 10*time.Second, "measured time per target")
	warm := fs.Duration("warmup", time.Second, "unmeasured warm-up per target (opens the connections)")
	users := fs.Int("users", 50, "users user1…userK whose queue tokens the pollers share")
	ahead := fs.Int("ahead", 200, "users entered before the pollers, so the pollers wait behind them: most of a crowd waits behind position 100, where the server answers from memory; 0 measures the front, where every poll reads Redis")
	minterFromFlags := mint.Flags(fs)
	password := fs.String("password", "demo-pass", "password of the demo users")
	loginConns := fs.Int("login-conns", 4, "connections of the login (BCrypt) measurement")
	loginDur := fs.Duration("login-duration", 3*time.Second, "measured time of the login measurement")
	mode := fs.String("mode", "closed", "closed: --conns connections poll as fast as answered, against the plain handler and login; open: each of the --users polls at the pace its answers ask for (pollAfterMs), for --duration after --spread")
	spread := fs.Duration("spread", 5*time.Second, "open loop: the users' first polls are spread over this long, unmeasured")
	redisFromFlags := measure.RedisFlag(fs)
	enterFromFlags := enterFlags(fs)
	limit := limitFlags(fs)
	own := fs.Bool("baseline-process", false, "run the plain handler in a process of its own, as the server runs, instead of inside the load tool (where it shares the tool's Go runtime and network poller, and costs the machine about a third less per request)")
	if err := o.Parse(fs, args); err != nil {
		return pollConfig{}, err
	}
	if *conns < 1 || *users < 1 || *loginConns < 1 || *dur <= 0 || *loginDur <= 0 || *warm < 0 || *ahead < 0 || *spread < 0 {
		return pollConfig{}, errors.New("poll: --conns, --users, --login-conns, --duration and --login-duration must be positive, --ahead and --spread not negative")
	}
	if *mode != "closed" && *mode != "open" {
		return pollConfig{}, fmt.Errorf("poll: --mode %q: want closed or open", *mode)
	}
	mt, err := minterFromFlags()
	if err != nil {
		return pollConfig{}, fmt.Errorf("poll: %w", err)
	}
	ec, err := enterFromFlags(mt)
	if err != nil {
		return pollConfig{}, fmt.Errorf("poll: %w", err)
	}
	rs, err := redisFromFlags()
	if err != nil {
		return pollConfig{}, fmt.Errorf("poll: %w", err)
	}
	cfg := pollConfig{conns: *conns, users: *users, ahead: *ahead, loginConns: *loginConns,
		dur: *dur, warm: *warm, loginDur: *loginDur, spread: *spread, password: *password, mt: mt,
		open: *mode == "open", rs: rs, enter: ec, ownProcess: *own, limit: *limit}
	if err := checkLimit(fs, &cfg); err != nil {
		rs.Close()
		return pollConfig{}, fmt.Errorf("poll: %w", err)
	}
	return cfg, nil
}

// Run is the poll scenario: with admission frozen, the pollers enter
// behind --ahead others. Closed loop: the server's GET position, a plain
// handler with a body of the same size (the yardstick), optionally enter
// (--enter) and login are measured in turn, each by closed-loop
// connections. Open loop: the pollers poll at their bands' pace.
func Run(ctx context.Context, o *scenario.Options, args []string) (report.Report, error) {
	cfg, err := parsePollFlags(o, args)
	if err != nil {
		return nil, err
	}
	defer cfg.rs.Close()
	hc := client.New(max(cfg.conns, cfg.loginConns, cfg.enter.conns), o.Timeout)
	a := &client.API{Base: o.Base, Room: o.Room, HTTP: hc, Rec: measure.NewRecorder()}
	adm := &client.Admin{Base: o.Admin, Token: o.AdminToken, Room: o.Room, HTTP: client.New(2, o.Timeout)}
	rep := &pollReport{Scenario: "poll", Base: o.Base, Room: o.Room, CPUs: runtime.NumCPU(), Users: cfg.users, Ahead: cfg.ahead,
		Mode: "closed", RedisShared: cfg.rs != nil}
	if cfg.open {
		rep.Mode = "open"
	}

	// Freeze admission for the run, so that every poll takes the WAITING
	// path — the one a waiting crowd hits — and restore it afterwards, also
	// after Ctrl-C.
	original, restore, err := users.FreezeAdmission(ctx, adm, "poll", "freezing admission during the run")
	if err != nil {
		return nil, err
	}
	defer restore()
	rep.TargetActive = original
	cleanup := context.WithoutCancel(ctx)

	fmt.Fprintf(os.Stderr, "poll: admission frozen (targetActive %d → 0); entering %d users ahead, then the %d pollers\n", original, cfg.ahead, cfg.users)
	if cfg.ahead > 0 {
		front, err := users.Prepare(ctx, a, cfg.mt, cfg.ahead, cfg.users+1, 16, cfg.password)
		defer users.LeaveAll(cleanup, a, adm, front, 16)
		if err != nil {
			return nil, fmt.Errorf("poll: %w", err)
		}
	}
	tokens, err := users.Prepare(ctx, a, cfg.mt, cfg.users, 1, 16, cfg.password)
	defer users.LeaveAll(cleanup, a, adm, tokens, 16)
	if err != nil {
		return nil, fmt.Errorf("poll: %w", err)
	}
	pollURL := o.Base + a.RoomPath("position")
	probe := &costProbe{rs: cfg.rs, adm: adm}
	switch {
	case cfg.open:
		fmt.Fprintf(os.Stderr, "poll: open loop: %d users at their bands' pace, %v spread + %v\n", cfg.users, cfg.spread, cfg.dur)
		rep.Server = openLoop(ctx, hc, pollURL, tokens, cfg.spread, cfg.dur, probe)
	case cfg.limit.on:
		rep.Limit = measureLimit(ctx, cfg, a, adm, probe, pollURL, tokens)
	default:
		if err := measureClosed(ctx, o, cfg, a, adm, probe, pollURL, tokens, rep); err != nil {
			return nil, err
		}
	}
	rep.Interrupted = ctx.Err() != nil
	return rep, nil
}

// measureClosed runs the closed-loop phases: the server, the yardstick,
// enter (with --enter) and login, and works out the ratios.
func measureClosed(ctx context.Context, o *scenario.Options, cfg pollConfig, a *client.API, adm *client.Admin, probe *costProbe, pollURL string, tokens []string, rep *pollReport) error {
	hc := a.HTTP
	baseURL, stop, err := startYardstick(ctx, hc, pollURL, tokens[0], cfg.ownProcess, rep)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintf(os.Stderr, "poll: server: %d conns, %v warm-up + %v\n", cfg.conns, cfg.warm, cfg.dur)
	rep.Server = measurePhase(ctx, hc, "server", cfg.conns, cfg.warm, cfg.dur, pollRequests(pollURL, tokens), probe)
	if ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "poll: baseline: %d conns, %v warm-up + %v\n", cfg.conns, cfg.warm, cfg.dur)
		rep.Baseline = measurePhase(ctx, hc, "baseline", cfg.conns, cfg.warm, cfg.dur, pollRequests(baseURL, tokens), nil)
	}
	if cfg.enter.on && ctx.Err() == nil {
		rep.Enter = measureEnter(ctx, cfg, a, adm, probe)
	}
	if ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "poll: login: %d conns, %v\n", cfg.loginConns, cfg.loginDur)
		rep.Login = measurePhase(ctx, hc, "login", cfg.loginConns, 0, cfg.loginDur, loginRequests(o.Base, cfg), nil)
	}
	if rep.Baseline != nil && rep.Baseline.RPS > 0 {
		rep.Ratio = rep.Server.RPS / rep.Baseline.RPS
		if rep.Server.Answered != rep.Server.OK {
			rep.AnsweredRatio = rep.Server.AnsweredRPS / rep.Baseline.RPS
		}
	}
	if rep.Login != nil && rep.Login.RPS > 0 {
		rep.CostRatio = rep.Server.AnsweredRPS / rep.Login.RPS // (1/login) ÷ (1/poll)
	}
	return nil
}

// costProbe measures what a phase costs beyond the client: Redis (with
// --redis) and the server's CPU (its /metrics; none when adm is nil). A
// nil probe measures nothing. With profileTo, it also saves the server's
// CPU profile over profileSeconds from the start of the measurement
// (profileErr says why it could not).
type costProbe struct {
	rs  *measure.RedisStats
	adm *client.Admin

	profileTo      string
	profileSeconds int
	profileErr     error
}

// probeMark is the counters at the start of a measured phase.
type probeMark struct {
	redis   measure.RedisCounters
	redisOK bool
	cpu     float64
	cpuOK   bool
	profile chan error // the profile's fetch, when one runs
}

const cpuMetric = "process_cpu_seconds_total"

// begin reads the counters as a phase's measurement starts: the server's
// CPU first, then Redis, so that the scrape is outside Redis's window.
func (p *costProbe) begin(ctx context.Context) probeMark {
	var m probeMark
	if p == nil {
		return m
	}
	if p.adm != nil {
		got, _ := client.ScrapeNames(ctx, p.adm, cpuMetric)
		m.cpu, m.cpuOK = got[cpuMetric]
	}
	if p.profileTo != "" && p.adm != nil {
		m.profile = make(chan error, 1)
		go func() { m.profile <- fetchProfile(ctx, p.adm, p.profileSeconds, p.profileTo) }()
	}
	if p.rs != nil {
		var err error
		m.redis, err = p.rs.Read(ctx)
		m.redisOK = err == nil
	}
	return m
}

// end reads the counters again (Redis first) and adds to ph its costs per
// answer.
func (p *costProbe) end(ctx context.Context, m probeMark, ph *phase) {
	if p == nil || ph == nil {
		return
	}
	if m.profile != nil {
		p.profileErr = <-m.profile
	}
	if m.redisOK {
		if after, err := p.rs.Read(ctx); err == nil {
			// The first read's INFO is counted between the two reads:
			// not the phase's.
			after.Reads--
			after.Commands--
			after.ByCommand["info"]--
			c := measure.RedisCostBetween(m.redis, after, ph.Answered, 6)
			ph.Redis = &c
		}
	}
	if p.adm == nil {
		return
	}
	got, _ := client.ScrapeNames(ctx, p.adm, cpuMetric)
	if c1, ok := got[cpuMetric]; ok && m.cpuOK && ph.Answered > 0 {
		ph.ServerCPUPerReqMicros = (c1 - m.cpu) * 1e6 / float64(ph.Answered)
	}
}

// startYardstick reads one real position answer and starts the plain
// handler that answers a body of the same size; it returns the handler's
// URL and its stop, and puts both body sizes in rep.
func startYardstick(ctx context.Context, hc *http.Client, pollURL, token string, own bool, rep *pollReport) (string, func(), error) {
	body, err := get(ctx, hc, pollURL, token)
	if err != nil {
		return "", nil, fmt.Errorf("poll: sample position: %w", err)
	}
	baseURL, stop, err := startBaseline(body, own)
	if err != nil {
		return "", nil, err
	}
	baseBody, err := get(ctx, hc, baseURL, token)
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("poll: baseline: %w", err)
	}
	rep.BodyBytes, rep.BaselineBytes = len(body), len(baseBody)
	rep.BaselineWhere = map[bool]string{false: "in-process", true: "own process"}[own]
	return baseURL, stop, nil
}

// pollRequests are GETs of target, worker w with the queue token w mod
// len(tokens).
func pollRequests(target string, tokens []string) reqFunc {
	return func(ctx context.Context, w, _ int) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+tokens[w%len(tokens)])
		}
		return req, err
	}
}

// loginRequests are logins of the pollers' users in turn, with the right
// password: each costs the server one BCrypt verification.
func loginRequests(base string, cfg pollConfig) reqFunc {
	logins := make([][]byte, cfg.users)
	for i := range logins {
		logins[i], _ = json.Marshal(map[string]string{"loginId": "user" + strconv.Itoa(i+1), "password": cfg.password})
	}
	return func(ctx context.Context, w, i int) (*http.Request, error) {
		body := logins[(w+i*cfg.loginConns)%len(logins)]
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/auth/login", bytes.NewReader(body))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
		}
		return req, err
	}
}

// leaveAll gives up the users' places, so the run leaves the queue as it
// found it.
func leaveAll(ctx context.Context, a *client.API, tokens []string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, t := range tokens {
		if ctx.Err() != nil {
			return
		}
		a.Leave(ctx, t)
	}
}

// get returns a 200 answer's body.
func get(ctx context.Context, hc *http.Client, url, bearer string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	return readOK(hc, req)
}

// readOK sends req and returns the body of a 200 answer.
func readOK(hc *http.Client, req *http.Request) ([]byte, error) {
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	return b, err
}

// measurePhase runs conns closed-loop workers against one target: warm
// unmeasured (it opens the connections), then d measured; probe (nil: none)
// measures what the measured part cost.
func measurePhase(ctx context.Context, hc *http.Client, target string, conns int, warm, d time.Duration, newReq reqFunc, probe *costProbe) *phase {
	return measurePhaseKeeping(ctx, hc, target, conns, warm, d, newReq, nil, probe)
}

// measurePhaseKeeping is measurePhase, handing each 2xx answer's body to
// keep (nil: bodies are discarded unread).
func measurePhaseKeeping(ctx context.Context, hc *http.Client, target string, conns int, warm, d time.Duration, newReq reqFunc,
	keep func(w int, body []byte), probe *costProbe) *phase {
	if warm > 0 {
		closedLoop(ctx, hc, target, conns, warm, newReq, keep)
	}
	m := probe.begin(ctx)
	rec, elapsed := closedLoop(ctx, hc, target, conns, d, newReq, keep)
	ph := summarize(target, conns, rec.Summary(target), elapsed)
	probe.end(ctx, m, ph)
	hc.CloseIdleConnections()
	return ph
}

// closedLoop runs conns workers for d; each sends its next request as soon
// as the previous answer is read. Requests use ctx, not the deadline, so the
// ones in flight at the deadline finish and count; the elapsed time runs
// until the last of them. Each worker records on its own Recorder.
func closedLoop(ctx context.Context, hc *http.Client, endpoint string, conns int, d time.Duration, newReq reqFunc, keep func(w int, body []byte)) (*measure.Recorder, time.Duration) {
	run, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	recs := make([]*measure.Recorder, conns)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range conns {
		rec := measure.NewRecorder()
		recs[w] = rec
		wg.Go(func() {
			for i := 0; i < maxRequests && run.Err() == nil; i++ {
				req, err := newReq(ctx, w, i)
				if err != nil {
					return
				}
				t0 := time.Now()
				resp, err := hc.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						rec.Record(endpoint, measure.NoResponse, time.Since(t0))
					}
					pace.Sleep(run, 10*time.Millisecond) // no hot spin on a refused connection
					continue
				}
				code := resp.StatusCode
				if keep != nil && code/100 == 2 {
					var body []byte
					if body, err = io.ReadAll(resp.Body); err == nil {
						keep(w, body)
					}
				} else {
					_, err = io.Copy(io.Discard, resp.Body)
				}
				resp.Body.Close()
				if err != nil {
					code = measure.NoResponse
				}
				rec.Record(endpoint, code, time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := measure.NewRecorder()
	for _, r := range recs {
		all.Merge(r)
	}
	return all, elapsed
}
