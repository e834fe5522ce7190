package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/gofiber/fiber/v2"
)

// maxRequests caps one closed-loop worker's requests in one phase, so the
// loop ends by count even if the clock never stopped it.
const maxRequests = 1_000_000

// pollReport is what the poll scenario measured. A phase is nil when Ctrl-C
// came before it.
type pollReport struct {
	Scenario      string  `json:"scenario"`
	Base          string  `json:"base"`
	Room          string  `json:"room"`
	CPUs          int     `json:"cpus"`
	Users         int     `json:"users"`
	Ahead         int     `json:"ahead"`
	TargetActive  int64   `json:"targetActive"` // restored after the run; 0 during it
	BodyBytes     int     `json:"bodyBytes"`
	BaselineBytes int     `json:"baselineBodyBytes"`
	Server        *phase  `json:"server,omitempty"`
	Baseline      *phase  `json:"baseline,omitempty"`
	Login         *phase  `json:"login,omitempty"`
	Ratio         float64 `json:"ratio,omitempty"`               // server ÷ baseline req/s; the bar is ≥ 0.5
	CostRatio     float64 `json:"perRequestCostRatio,omitempty"` // (1/login req/s) ÷ (1/poll req/s)
	Interrupted   bool    `json:"interrupted"`
}

// phase is one closed-loop measurement against one target.
type phase struct {
	Target  string  `json:"target"`
	Conns   int     `json:"conns"`
	Seconds float64 `json:"seconds"`
	OK      int     `json:"ok"`  // 2xx answers
	RPS     float64 `json:"rps"` // OK ÷ Seconds
	Latency Summary `json:"latency"`
}

// reqFunc builds worker w's i-th request.
type reqFunc func(ctx context.Context, w, i int) (*http.Request, error)

// pollConfig is the poll scenario's flags.
type pollConfig struct {
	conns, users, ahead, loginConns int
	dur, warm, loginDur             time.Duration
	password                        string
	mt                              *minter // nil: log in
}

// parsePollFlags reads and checks the poll scenario's flags.
func parsePollFlags(o *options, args []string) (pollConfig, error) {
	fs := newFlagSet("poll", o)
	conns := fs.Int("conns", 64, "closed-loop connections polling each target")
	dur := fs.Duration("duration", 10*time.Second, "measured time per target")
	warm := fs.Duration("warmup", time.Second, "unmeasured warm-up per target (opens the connections)")
	users := fs.Int("users", 50, "users user1…userK whose queue tokens the pollers share")
	ahead := fs.Int("ahead", 200, "users entered before the pollers, so the pollers wait behind them: most of a crowd waits behind position 100, where the server answers from memory; 0 measures the front, where every poll reads Redis")
	minterFromFlags := mintFlags(fs)
	password := fs.String("password", "demo-pass", "password of the demo users")
	loginConns := fs.Int("login-conns", 4, "connections of the login (BCrypt) measurement")
	loginDur := fs.Duration("login-duration", 3*time.Second, "measured time of the login measurement")
	if err := o.parse(fs, args); err != nil {
		return pollConfig{}, err
	}
	if *conns < 1 || *users < 1 || *loginConns < 1 || *dur <= 0 || *loginDur <= 0 || *warm < 0 || *ahead < 0 {
		return pollConfig{}, errors.New("poll: --conns, --users, --login-conns, --duration and --login-duration must be positive, --ahead not negative")
	}
	mt, err := minterFromFlags()
	if err != nil {
		return pollConfig{}, fmt.Errorf("poll: %w", err)
	}
	return pollConfig{conns: *conns, users: *users, ahead: *ahead, loginConns: *loginConns,
		dur: *dur, warm: *warm, loginDur: *loginDur, password: *password, mt: mt}, nil
}

// runPoll is the poll scenario: with admission frozen, the pollers enter
// behind --ahead others; then the server's GET position, a plain handler
// with a body of the same size (the yardstick) and login are measured in
// turn, each by closed-loop connections.
func runPoll(ctx context.Context, o *options, args []string) (report, error) {
	cfg, err := parsePollFlags(o, args)
	if err != nil {
		return nil, err
	}
	hc := newClient(max(cfg.conns, cfg.loginConns), o.timeout)
	a := &api{base: o.base, room: o.room, hc: hc, rec: NewRecorder()}
	adm := &admin{base: o.admin, token: o.adminToken, room: o.room, hc: newClient(2, o.timeout)}
	rep := &pollReport{Scenario: "poll", Base: o.base, Room: o.room, CPUs: runtime.NumCPU(), Users: cfg.users, Ahead: cfg.ahead}

	// Freeze admission for the run, so that every poll takes the WAITING
	// path — the one a waiting crowd hits — and restore it afterwards, also
	// after Ctrl-C.
	original, restore, err := freezeAdmission(ctx, adm, "poll", "freezing admission during the run")
	if err != nil {
		return nil, err
	}
	defer restore()
	rep.TargetActive = original
	cleanup := context.WithoutCancel(ctx)

	fmt.Fprintf(os.Stderr, "poll: admission frozen (targetActive %d → 0); entering %d users ahead, then the %d pollers\n", original, cfg.ahead, cfg.users)
	if cfg.ahead > 0 {
		front, err := prepareUsers(ctx, a, cfg.mt, cfg.ahead, cfg.users+1, 16, cfg.password)
		defer leaveAll(cleanup, a, front)
		if err != nil {
			return nil, fmt.Errorf("poll: %w", err)
		}
	}
	tokens, err := prepareUsers(ctx, a, cfg.mt, cfg.users, 1, 16, cfg.password)
	defer leaveAll(cleanup, a, tokens)
	if err != nil {
		return nil, fmt.Errorf("poll: %w", err)
	}
	pollURL := o.base + a.roomPath("position")
	baseURL, stop, err := startYardstick(ctx, hc, pollURL, tokens[0], rep)
	if err != nil {
		return nil, err
	}
	defer stop()

	fmt.Fprintf(os.Stderr, "poll: server: %d conns, %v warm-up + %v\n", cfg.conns, cfg.warm, cfg.dur)
	rep.Server = measure(ctx, hc, "server", cfg.conns, cfg.warm, cfg.dur, pollRequests(pollURL, tokens))
	if ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "poll: baseline: %d conns, %v warm-up + %v\n", cfg.conns, cfg.warm, cfg.dur)
		rep.Baseline = measure(ctx, hc, "baseline", cfg.conns, cfg.warm, cfg.dur, pollRequests(baseURL, tokens))
	}
	if ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "poll: login: %d conns, %v\n", cfg.loginConns, cfg.loginDur)
		rep.Login = measure(ctx, hc, "login", cfg.loginConns, 0, cfg.loginDur, loginRequests(o.base, cfg))
	}
	rep.Interrupted = ctx.Err() != nil
	if rep.Baseline != nil && rep.Baseline.RPS > 0 {
		rep.Ratio = rep.Server.RPS / rep.Baseline.RPS
	}
	if rep.Login != nil && rep.Login.RPS > 0 {
		rep.CostRatio = rep.Server.RPS / rep.Login.RPS // (1/login) ÷ (1/poll)
	}
	return rep, nil
}

// startYardstick reads one real position answer and starts the plain
// handler that answers a body of the same size; it returns the handler's
// URL and its stop, and puts both body sizes in rep.
func startYardstick(ctx context.Context, hc *http.Client, pollURL, token string, rep *pollReport) (string, func(), error) {
	body, err := get(ctx, hc, pollURL, token)
	if err != nil {
		return "", nil, fmt.Errorf("poll: sample position: %w", err)
	}
	baseURL, stop, err := startBaseline(body)
	if err != nil {
		return "", nil, err
	}
	baseBody, err := get(ctx, hc, baseURL, token)
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("poll: baseline: %w", err)
	}
	rep.BodyBytes, rep.BaselineBytes = len(body), len(baseBody)
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
func leaveAll(ctx context.Context, a *api, tokens []string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, t := range tokens {
		if ctx.Err() != nil {
			return
		}
		a.leave(ctx, t)
	}
}

// get returns a 200 answer's body.
func get(ctx context.Context, hc *http.Client, url, bearer string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
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

// startBaseline serves the yardstick: a plain Fiber app on 127.0.0.1:0 with
// one GET route whose handler encodes a fixed document with c.JSON — the
// server's own WAITING answer, so both bodies have the same size. It returns
// the route's URL and a func that stops the app.
func startBaseline(body []byte) (string, func(), error) {
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", nil, fmt.Errorf("poll: baseline document: %w", err)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("poll: baseline: %w", err)
	}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/position", func(c *fiber.Ctx) error { return c.JSON(doc) })
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = app.Listener(ln) // returns when the app shuts down
	}()
	stop := func() {
		_ = app.ShutdownWithTimeout(5 * time.Second)
		<-done
	}
	return "http://" + ln.Addr().String() + "/position", stop, nil
}

// measure runs conns closed-loop workers against one target: warm unmeasured
// (it opens the connections), then d measured.
func measure(ctx context.Context, hc *http.Client, target string, conns int, warm, d time.Duration, newReq reqFunc) *phase {
	if warm > 0 {
		closedLoop(ctx, hc, target, conns, warm, newReq)
	}
	rec, elapsed := closedLoop(ctx, hc, target, conns, d, newReq)
	hc.CloseIdleConnections()
	s := rec.Summary(target)
	ok := 0
	for code, n := range s.Codes {
		if code/100 == 2 {
			ok += n
		}
	}
	return &phase{Target: target, Conns: conns, Seconds: elapsed.Seconds(), OK: ok, RPS: float64(ok) / elapsed.Seconds(), Latency: s}
}

// closedLoop runs conns workers for d; each sends its next request as soon
// as the previous answer is read. Requests use ctx, not the deadline, so the
// ones in flight at the deadline finish and count; the elapsed time runs
// until the last of them. Each worker records on its own Recorder.
func closedLoop(ctx context.Context, hc *http.Client, endpoint string, conns int, d time.Duration, newReq reqFunc) (*Recorder, time.Duration) {
	run, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	recs := make([]*Recorder, conns)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range conns {
		rec := NewRecorder()
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
						rec.Record(endpoint, codeError, time.Since(t0))
					}
					sleep(run, 10*time.Millisecond) // no hot spin on a refused connection
					continue
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				code := resp.StatusCode
				if err != nil {
					code = codeError
				}
				rec.Record(endpoint, code, time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := NewRecorder()
	for _, r := range recs {
		all.Merge(r)
	}
	return all, elapsed
}

func (r *pollReport) print(w io.Writer) {
	fmt.Fprintf(w, "\npoll scenario: GET %s/api/v1/rooms/%s/position (queue JWT; status from memory behind position 100, else one Redis script) vs a plain Fiber JSON handler\n", r.Base, r.Room)
	fmt.Fprintf(w, "the pollers wait behind %d users (positions %d–%d)\n", r.Ahead, r.Ahead+1, r.Ahead+r.Users)
	fmt.Fprintf(w, "admission frozen during the run (targetActive %d → 0 → %d): every poll answers WAITING for one of %d users\n",
		r.TargetActive, r.TargetActive, r.Users)
	fmt.Fprintf(w, "response body: server %d B, baseline %d B (c.JSON of the same document, in-process on 127.0.0.1:0)\n", r.BodyBytes, r.BaselineBytes)
	fmt.Fprintf(w, "NOTE: the load generator (and the in-process baseline) share this machine's %d CPUs with the server;\n", r.CPUs)
	fmt.Fprintln(w, "      compare the ratios, not the absolute rates")
	if r.Interrupted {
		fmt.Fprintln(w, "INTERRUPTED: phases not reached are missing")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\tconns\tseconds\trequests\tstatus codes\treq/s\tp50 ms\tp99 ms\tmax ms\t")
	for _, p := range []*phase{r.Server, r.Baseline, r.Login} {
		if p == nil {
			continue
		}
		l := p.Latency
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%s\t%s\t%s\t%.2f\t%.2f\t%.1f\t\n", p.Target, p.Conns, p.Seconds, commas(l.Count),
			l.CodesString(), commas(int(p.RPS+0.5)), msf(l.P50), msf(l.P99), msf(l.Max))
	}
	tw.Flush()
	fmt.Fprintln(w)
	if r.Ratio > 0 {
		verdict := "met"
		if r.Ratio < 0.5 {
			verdict = "NOT met"
		}
		fmt.Fprintf(w, "poll throughput ratio server ÷ baseline: %.2f (contract bar ≥ 0.5: %s)\n", r.Ratio, verdict)
	}
	if r.CostRatio > 0 {
		fmt.Fprintf(w, "per-request cost: the seed's poll ran BCrypt, ≈ one login = 1/%.1f req/s = %.2f ms; ours = 1/%s req/s = %.3f ms\n",
			r.Login.RPS, 1000/r.Login.RPS, commas(int(r.Server.RPS+0.5)), 1000/r.Server.RPS)
		fmt.Fprintf(w, "per-request cost ratio (1/login rps) ÷ (1/poll rps): %s× (seed: 1×; contract: per-poll CPU ≥ 1000× below one BCrypt cost-10 verify)\n",
			commas(int(r.CostRatio+0.5)))
		fmt.Fprintln(w, "  both are wall-clock costs at saturation of the shared CPUs; the load generator's share weighs far more on a poll than on a login")
	}
}
