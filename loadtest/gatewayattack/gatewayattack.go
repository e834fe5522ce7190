package gatewayattack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/pace"
	"waitingroom/loadtest/internal/report"
	"waitingroom/loadtest/internal/scenario"
	"waitingroom/server/pass/passcheck"
)

// gwConfig is the scenario's flags.
type gwConfig struct {
	on                     map[string]bool
	n, perAddr             int
	over, bound, attackFor time.Duration
	protected              string // the legitimate visitors' protected request, "POST /api/orders"
	originListen           string
	pid                    int
	sessionRoom            string
	sessionPath            string
	smuggle, rounds        int
	slowReaders, slowKiB   int
	downloadMiB            int
	bodies, bodyMiB        int
	shareAddrs             int
	sessionBurst           int
	sessionRate            float64
	stuffAddrs             int
	stuffBare, stuffSolved int
	rssSlackMiB            float64
}

func gwFlags(fs *flag.FlagSet) func() (gwConfig, error) {
	var c gwConfig
	list := fs.String("attacks", "all", "gateway attacks beside the visitors, comma-separated: "+strings.Join(gwAttackNames, ",")+", all or none")
	fs.IntVar(&c.n, "n", 200, "legitimate visitors in each run (from 127.1.x.y)")
	fs.IntVar(&c.perAddr, "users-per-addr", 5, "legitimate visitors per source address")
	fs.DurationVar(&c.over, "over", 10*time.Second, "the visitors arrive evenly over this time")
	fs.DurationVar(&c.bound, "visitor-bound", 2*time.Minute, "a visitor not through (READY and its protected request) within this time of arriving is lost")
	fs.DurationVar(&c.attackFor, "attack-for", 0, "slow readers and session sharing last this long (0: --over)")
	fs.StringVar(&c.protected, "protected", "POST /api/orders", "the visitors' protected request once READY (the server's WR_PROTECT must cover it in --room)")
	fs.StringVar(&c.originListen, "origin-listen", "127.0.0.1:18090", "the origin's listen address, loopback (the server's WR_UPSTREAM)")
	fs.IntVar(&c.pid, "server-pid", 0, "the server's process id: RSS from /proc/<pid>/status (0: none)")
	fs.StringVar(&c.sessionRoom, "session-room", "club", "session sharing: a room the tool sets to pass mode session; its route must cover --session-path")
	fs.StringVar(&c.sessionPath, "session-path", "/members/home", "session sharing: the protected GET")
	fs.IntVar(&c.smuggle, "smuggle", 20, "upgrade smuggling: connections with Upgrade: websocket on /hello and a protected POST pipelined behind")
	fs.IntVar(&c.rounds, "variant-rounds", 3, "route variants: rounds of every variant of the protected paths without a pass")
	fs.IntVar(&c.slowReaders, "slow-readers", 6, "slow readers of the origin's large download (with a Content-Length)")
	fs.IntVar(&c.slowKiB, "slow-kib", 64, "slow readers: KiB a second each reads")
	fs.IntVar(&c.downloadMiB, "download-mib", 100, "the origin's large download, MiB")
	fs.IntVar(&c.bodies, "bodies", 4, "large bodies: uploads to the protected path without a pass, and as many to an unprotected one")
	fs.IntVar(&c.bodyMiB, "body-mib", 16, "large bodies: MiB each")
	fs.IntVar(&c.shareAddrs, "share-addrs", 8, "session sharing: source addresses using one session cookie at once")
	fs.IntVar(&c.sessionBurst, "session-burst", 60, "session sharing: the room's sessionBurst, for the bar")
	fs.Float64Var(&c.sessionRate, "session-rate", 10, "session sharing: the room's sessionRate a second, for the bar")
	fs.IntVar(&c.stuffAddrs, "stuffing-addrs", 3, "queue stuffing: source addresses of the fresh visitors")
	fs.IntVar(&c.stuffBare, "stuffing-bare", 200, "queue stuffing: enters without a proof of work")
	fs.IntVar(&c.stuffSolved, "stuffing-solved", 40, "queue stuffing: enters with a solved proof of work")
	fs.Float64Var(&c.rssSlackMiB, "rss-slack", 64, "the bar for server RSS: the peak under attack at most the baseline's peak + this many MiB")
	return func() (gwConfig, error) {
		c.on = map[string]bool{}
		for _, a := range strings.Split(*list, ",") {
			switch a = strings.TrimSpace(a); {
			case a == "all":
				for _, n := range gwAttackNames {
					c.on[n] = true
				}
			case a == "none" || a == "":
			case slices.Contains(gwAttackNames, a):
				c.on[a] = true
			default:
				return c, fmt.Errorf("--attacks: unknown attack %q (want %s, all or none)", a, strings.Join(gwAttackNames, ","))
			}
		}
		if c.n < 1 || c.perAddr < 1 || c.over < 0 || c.bound <= 0 || c.attackFor < 0 || c.smuggle < 0 || c.rounds < 0 ||
			c.slowReaders < 0 || c.slowKiB < 1 || c.downloadMiB < 1 || c.bodies < 0 || c.bodyMiB < 1 || c.shareAddrs < 0 ||
			c.stuffAddrs < 1 || c.stuffAddrs > 250 || c.stuffBare < 0 || c.stuffSolved < 0 || c.rssSlackMiB < 0 || c.pid < 0 {
			return c, errors.New("flags: -n, --users-per-addr, --slow-kib, --download-mib, --body-mib at least 1; --stuffing-addrs 1-250; nothing negative")
		}
		if c.n/c.perAddr > 200*250 {
			return c, errors.New("-n: too many addresses")
		}
		if c.attackFor == 0 {
			c.attackFor = max(c.over, time.Second)
		}
		for name, n := range map[string]int{"smuggle": c.smuggle, "variants": c.rounds, "slow-readers": c.slowReaders,
			"bodies": c.bodies, "session-share": c.shareAddrs, "stuffing": c.stuffBare + c.stuffSolved} {
			if n == 0 {
				delete(c.on, name)
			}
		}
		if c.sessionRoom == "" {
			delete(c.on, "session-share")
		}
		if m, _, ok := strings.Cut(c.protected, " "); !ok || m == "" {
			return c, fmt.Errorf("--protected %q: want \"METHOD /path\"", c.protected)
		}
		return c, nil
	}
}

// gwRun is one run: the visitors' figures, what the origin saw, RSS.
type gwRun struct {
	Legit  *gwLegit     `json:"legitimate"`
	Origin originCounts `json:"origin"`
	RSS    rssRange     `json:"serverRss"`
}

// rssRange is the server's RSS over a run, MiB (0: not read).
type rssRange struct {
	Before float64 `json:"beforeMiB"`
	Peak   float64 `json:"peakMiB"`
	After  float64 `json:"afterMiB"`
}

// readRSS is VmRSS of pid in MiB (0 when it cannot be read).
func readRSS(pid int) float64 {
	if pid == 0 {
		return 0
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

// sampleRSS reads the RSS every 100 ms until the returned stop, which
// gives the peak.
func sampleRSS(pid int) (stop func() float64) {
	done := make(chan struct{})
	var peak float64
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			peak = max(peak, readRSS(pid))
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() float64 {
		close(done)
		wg.Wait()
		return max(peak, readRSS(pid))
	}
}

// Run is the gateway-attack scenario: args are its flags; o gets the
// common ones.
func Run(ctx context.Context, o *scenario.Options, args []string) (report.Report, error) {
	fs := scenario.NewFlagSet("gateway-attack", o)
	if f := fs.Lookup("room"); f != nil {
		f.DefValue = "sale"
		_ = f.Value.Set("sale")
	}
	configOf := gwFlags(fs)
	if err := o.Parse(fs, args); err != nil {
		return nil, err
	}
	c, err := configOf()
	if err != nil {
		return nil, fmt.Errorf("gateway-attack: %w", err)
	}
	if err := client.CheckLoopback(o.Base); err != nil {
		return nil, fmt.Errorf("gateway-attack: %w", err)
	}
	if h, _, err := net.SplitHostPort(c.originListen); err != nil || !client.IsLoopback(h) {
		return nil, fmt.Errorf("gateway-attack: %w", errOriginAddr)
	}
	u, _ := url.Parse(o.Base)
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "80")
	}
	check, err := passcheck.New(passcheck.Options{JWKSURL: o.Base + "/_wr/.well-known/jwks.json"})
	if err != nil {
		return nil, fmt.Errorf("gateway-attack: %w", err)
	}
	origin, err := startGWOrigin(c.originListen, check, int64(c.downloadMiB)<<20)
	if err != nil {
		return nil, fmt.Errorf("gateway-attack: %w", err)
	}
	defer origin.close()
	rep := newGWReport(o, c)
	if err := awaitGateway(ctx, o.Base); err != nil {
		return rep, fmt.Errorf("gateway-attack: %w", err)
	}
	if c.on["session-share"] {
		if err := setSessionRoom(ctx, o, c.sessionRoom); err != nil {
			rep.Notes = append(rep.Notes, "session sharing left out: "+err.Error())
			delete(c.on, "session-share")
		}
	}
	rep.AttacksOn = rep.attacksOn(c)
	_ = origin.counts() // the warm-up's requests

	fmt.Fprintln(os.Stderr, "gateway-attack: the baseline — the visitors alone")
	rep.Baseline = runGW(ctx, o, c, origin, 0, nil)
	if ctx.Err() != nil {
		rep.Interrupted = true
		rep.finish()
		return rep, nil
	}
	fmt.Fprintf(os.Stderr, "gateway-attack: the visitors beside the attacks: %s\n", rep.AttacksOn)
	g := &gwAttacker{base: o.Base, host: host, timeout: o.Timeout}
	rep.Attack = runGW(ctx, o, c, origin, (c.n+c.perAddr-1)/c.perAddr, func(run context.Context) {
		rep.Attacks = launchGW(run, g, c, o.Room)
	})
	for _, a := range rep.Attacks {
		a.Unpassed = rep.Attack.Origin.Unpassed[a.Name]
		if a.Name == "smuggle" {
			// A smuggled request comes through a tunnel: without the
			// gateway's X-Forwarded-For, so from no address the origin sees.
			a.Unpassed += rep.Attack.Origin.Unpassed[noForwarded]
		}
	}
	rep.Interrupted = ctx.Err() != nil
	rep.finish()
	return rep, nil
}

// runGW runs the visitors from the addrFrom-th address with attacks (if
// any) beside them, and reads RSS and the origin's counts.
func runGW(ctx context.Context, o *scenario.Options, c gwConfig, origin *gwOrigin, addrFrom int, attacks func(context.Context)) *gwRun {
	run := &gwRun{RSS: rssRange{Before: readRSS(c.pid)}}
	stop := sampleRSS(c.pid)
	var wg sync.WaitGroup
	if attacks != nil {
		wg.Go(func() { attacks(ctx) })
	}
	run.Legit = runLegit(ctx, o.Base, o.Room, c.protected, c.n, c.perAddr, addrFrom, c.over, c.bound, o.Timeout)
	wg.Wait()
	run.RSS.Peak = stop()
	// What the server gives back once the attacks have ended.
	pace.Sleep(ctx, 3*time.Second)
	run.RSS.After = readRSS(c.pid)
	run.Origin = origin.counts()
	return run
}

// launchGW runs every attack that is on, at once, and returns what each
// achieved once all have ended.
func launchGW(ctx context.Context, g *gwAttacker, c gwConfig, room string) []*gwAttack {
	var mu sync.Mutex
	var out []*gwAttack
	var wg sync.WaitGroup
	add := func(name string, f func() *gwAttack) {
		if !c.on[name] {
			return
		}
		wg.Go(func() {
			a := f()
			mu.Lock()
			out = append(out, a)
			mu.Unlock()
		})
	}
	add("smuggle", func() *gwAttack { return g.smuggle(ctx, c.smuggle) })
	add("variants", func() *gwAttack { return g.variants(ctx, c.rounds) })
	add("slow-readers", func() *gwAttack { return g.slowReaders(ctx, c.slowReaders, c.slowKiB<<10, c.attackFor) })
	add("bodies", func() *gwAttack { return g.bodies(ctx, c.bodies, c.bodyMiB) })
	add("session-share", func() *gwAttack {
		return g.sessionShare(ctx, c.sessionRoom, c.sessionPath, c.shareAddrs, c.attackFor, c.bound)
	})
	add("stuffing", func() *gwAttack { return g.stuffing(ctx, room, c.stuffAddrs, c.stuffBare, c.stuffSolved) })
	wg.Wait()
	slices.SortFunc(out, func(a, b *gwAttack) int {
		return slices.Index(gwAttackNames, a.Name) - slices.Index(gwAttackNames, b.Name)
	})
	return out
}

// awaitGateway waits until the gateway forwards an unprotected request to
// the origin (200), at most 30 s.
func awaitGateway(ctx context.Context, base string) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/hello", nil)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = client.StatusError(resp.StatusCode)
		}
		if time.Now().After(deadline) || !pace.Sleep(ctx, 200*time.Millisecond) {
			return fmt.Errorf("the gateway did not forward GET /hello to the origin: %w (is WR_UPSTREAM the --origin-listen address?)", err)
		}
	}
}

// setSessionRoom sets room's pass mode to session through the admin API.
func setSessionRoom(ctx context.Context, o *scenario.Options, room string) error {
	body, _ := json.Marshal(map[string]any{"gateway": map[string]any{"pass": "session"}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, o.Admin+"/admin/rooms/"+url.PathEscape(room), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+o.AdminToken)
	resp, err := (&http.Client{Timeout: o.Timeout}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("PUT /admin/rooms/%s: %w", room, client.StatusError(resp.StatusCode))
	}
	return nil
}
