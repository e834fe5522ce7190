package poll

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/users"
)

// The poll scenario's --limit: the HTTP paths against the two least a
// request can cost on this machine, one after another on the same cores,
// all at --conns connections:
//
//	(a) the plain handler (enter's body, in a process of its own);
//	(b) the floor: the same handler making one script call on the
//	    server's Redis per request (floor.go), in a process of its own;
//	(c) enter, for users already waiting and for fresh users;
//	(d) the poll at the front (--ahead 0).
//
// (a) and (b) run before and after enter (users waiting) and (d), and the
// ratios are to the mean of each pair, so that a machine whose load
// drifts moves the yardsticks with the paths; the fresh users' enter
// comes last (see measureLimit). Each of (c) and (d) is reported as a ratio to
// both: (a) says what the path costs over serving HTTP at all, (b) what
// it costs over HTTP and the one Redis round trip an enter cannot avoid.

// limitConfig is --limit's flags.
type limitConfig struct {
	on         bool
	cpuProfile string // the server's CPU profile over the fresh-enter phase, to this file
}

// limitFlags registers --limit's flags on fs.
func limitFlags(fs *flag.FlagSet) *limitConfig {
	c := &limitConfig{}
	fs.BoolVar(&c.on, "limit", false, "closed loop: (a) the plain handler, (b) the floor — the plain handler making one EVALSHA (ZADD NX + ZRANK on a key of its own) on --redis per request — (c) enter for users already waiting, (d) the poll at the front (--ahead 0), (b) and (a) again, then (c) enter for fresh users; one table of rates, p50/p99 and the ratios of (c) and (d) to (a) and to (b). Both yardsticks run in processes of their own. Needs --mint-tokens and --redis (the server's Redis); run the server with WR_RATE_LIMITS=off")
	fs.StringVar(&c.cpuProfile, "cpu-profile", "", "with --limit: save the server's CPU profile over the measured part of the fresh-enter phase to this file (its /debug/pprof/profile, with --admin-token)")
	return c
}

// checkLimit checks --limit's flags against the others and sets what it
// implies: the poll at the front, both yardsticks in processes of their
// own.
func checkLimit(fs *flag.FlagSet, cfg *pollConfig) error {
	l := cfg.limit
	if !l.on {
		if l.cpuProfile != "" {
			return errors.New("--cpu-profile goes with --limit")
		}
		return nil
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case cfg.open:
		return errors.New("--limit is a closed loop: not with --mode open")
	case cfg.mt == nil:
		return errors.New("--limit needs --mint-tokens (fresh users cannot all log in)")
	case cfg.rs == nil:
		return errors.New("--limit needs --redis, the server's Redis: the floor makes its call there")
	case set["ahead"] && cfg.ahead != 0:
		return errors.New("--limit measures the poll at the front: --ahead must be 0")
	case set["enter-conns"] && cfg.enter.conns != cfg.conns:
		return errors.New("--limit runs every phase at --conns connections: no --enter-conns")
	case cfg.enter.fresh < 1 || cfg.enter.firstID < 1:
		return errors.New("--enter-users and --enter-first-id must be positive")
	}
	cfg.ahead, cfg.ownProcess = 0, true
	return nil
}

// limitPhases is what --limit measured; a phase is nil when Ctrl-C came
// before it.
type limitPhases struct {
	PlainBefore *phase `json:"plainBefore,omitempty"` // (a)
	FloorBefore *phase `json:"floorBefore,omitempty"` // (b)
	Waiting     *phase `json:"enterWaiting,omitempty"`
	Fresh       *phase `json:"enterFresh,omitempty"`
	Poll        *phase `json:"pollFront,omitempty"`
	FloorAfter  *phase `json:"floorAfter,omitempty"`
	PlainAfter  *phase `json:"plainAfter,omitempty"`
	// Plain and Floor are the yardsticks' req/s: the mean of before and
	// after (before alone when after is missing).
	Plain float64    `json:"plainRps"`
	Floor float64    `json:"floorRps"`
	Rows  []limitRow `json:"rows"`
	// BodyBytes is enter's answer, which both yardsticks answer too;
	// PollBodyBytes the poll's.
	BodyBytes     int    `json:"bodyBytes"`
	PollBodyBytes int    `json:"pollBodyBytes"`
	FloorKey      string `json:"floorKey"`
	// FloorMembers is the floor key's cardinality after the floor's
	// phases: one member per request that made its Redis call, warm-ups
	// included.
	FloorMembers int64  `json:"floorMembers"`
	FreshEntered int    `json:"freshEntered"`
	CPUProfile   string `json:"cpuProfile,omitempty"` // the file written, --cpu-profile
	LoadBefore   string `json:"loadBefore"`           // /proc/loadavg's first three fields
	LoadAfter    string `json:"loadAfter"`
	Error        string `json:"error,omitempty"`
}

// limitRow is one path's rate and its ratios to the yardsticks.
type limitRow struct {
	Name    string  `json:"name"`
	RPS     float64 `json:"rps"`
	P50Ms   float64 `json:"p50Ms"`
	P99Ms   float64 `json:"p99Ms"`
	VsPlain float64 `json:"vsPlain"` // ÷ (a)
	VsFloor float64 `json:"vsFloor"` // ÷ (b); 0 for (a) and (b)
}

// The phases' names, as the tables print them.
const (
	limitPlain   = "(a) plain handler"
	limitFloor   = "(b) floor: plain + 1 EVALSHA"
	limitWaiting = "(c) enter, users waiting"
	limitFresh   = "(c) enter, fresh users"
	limitPoll    = "(d) poll at the front"
)

// measureLimit runs --limit's phases; the pollers (tokens) wait at the
// front.
func measureLimit(ctx context.Context, cfg pollConfig, a *client.API, adm *client.Admin, probe *costProbe, pollURL string, tokens []string) *limitPhases {
	l := &limitPhases{LoadBefore: measure.LoadAverage()}
	defer func() { l.LoadAfter = measure.LoadAverage() }()
	hc, conns := a.HTTP, cfg.conns
	enterURL := a.Base + a.RoomPath("enter")
	fail := func(err error) *limitPhases { l.Error = err.Error(); return l }
	access, err := users.AccessTokens(ctx, a, cfg.mt, cfg.users, 1, 16, cfg.password)
	if err != nil {
		return fail(err)
	}
	sample, err := post(ctx, hc, enterURL, access[0])
	if err != nil {
		return fail(fmt.Errorf("sample enter: %w", err))
	}
	pollSample, err := get(ctx, hc, pollURL, tokens[0])
	if err != nil {
		return fail(fmt.Errorf("sample position: %w", err))
	}
	l.BodyBytes, l.PollBodyBytes = len(sample), len(pollSample)
	plainURL, stopPlain, err := startBaseline(sample, true)
	if err != nil {
		return fail(err)
	}
	defer stopPlain()
	l.FloorKey = newFloorKey()
	floorURL, stopFloor, err := startBaselineProcess(sample, floorArgs(cfg.rs.URL, l.FloorKey)...)
	if err != nil {
		return fail(err)
	}
	defer func() {
		stopFloor()
		n, err := floorMembers(context.WithoutCancel(ctx), cfg.rs.Client, l.FloorKey)
		if err != nil && l.Error == "" {
			l.Error = err.Error()
		}
		l.FloorMembers = n
	}()
	fresh, err := users.AccessTokens(ctx, a, cfg.mt, cfg.enter.fresh, cfg.enter.firstID, 16, cfg.password)
	if err != nil {
		return fail(err)
	}

	fmt.Fprintf(os.Stderr, "poll: --limit: (a), (b), enter (waiting), poll at the front, (b), (a), enter (fresh): %d conns, %v warm-up + %v each\n", conns, cfg.warm, cfg.dur)
	redisOnly := &costProbe{rs: cfg.rs} // the yardsticks: Redis's counters, not the idle server's CPU
	step := func(name, target string, newReq reqFunc, p *costProbe) *phase {
		if ctx.Err() != nil {
			return nil
		}
		fmt.Fprintf(os.Stderr, "poll: %s\n", name)
		return measurePhase(ctx, hc, name, conns, cfg.warm, cfg.dur, newReq, p)
	}
	l.PlainBefore = step(limitPlain, plainURL, postRequests(plainURL, access), nil)
	l.FloorBefore = step(limitFloor, floorURL, postRequests(floorURL, access), redisOnly)
	l.Waiting = step(limitWaiting, enterURL, postRequests(enterURL, access), probe)
	l.Poll = step(limitPoll, pollURL, pollRequests(pollURL, tokens), probe)
	l.FloorAfter = step(limitFloor+", again", floorURL, postRequests(floorURL, access), redisOnly)
	l.PlainAfter = step(limitPlain+", again", plainURL, postRequests(plainURL, access), nil)
	// The fresh users come last: a room holding a hundred thousand more
	// users than it did costs the server and Redis background work (their
	// presence, and their removal when they go idle or leave), which would
	// otherwise land on the phases after them — the floor above all, on
	// the same Redis.
	kept := make([][]string, conns) // the fresh users' queue tokens, by worker
	if ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "poll: %s\n", limitFresh)
		fp := *probe
		if cfg.limit.cpuProfile != "" {
			fp.profileTo, fp.profileSeconds = cfg.limit.cpuProfile, max(1, int(cfg.dur/time.Second))
		}
		var next atomic.Int64
		l.Fresh = measurePhaseKeeping(ctx, hc, limitFresh, conns, cfg.warm, cfg.dur, freshRequests(enterURL, fresh, &next),
			func(w int, body []byte) {
				if t := jsonString(body, "queueToken"); t != "" {
					kept[w] = append(kept[w], t)
				}
			}, &fp)
		if fp.profileErr != nil {
			l.Error = fmt.Sprintf("cpu profile: %v", fp.profileErr)
		} else if fp.profileTo != "" {
			l.CPUProfile = fp.profileTo
		}
	}
	var left []string
	for _, ts := range kept {
		left = append(left, ts...)
	}
	l.FreshEntered = len(left)
	users.LeaveAll(context.WithoutCancel(ctx), a, adm, left, max(16, conns))
	l.finish()
	return l
}

// finish works out the yardsticks' rates and the table's rows.
func (l *limitPhases) finish() {
	mean := func(before, after *phase) float64 {
		switch {
		case before == nil:
			return 0
		case after == nil || after.RPS <= 0:
			return before.RPS
		}
		return (before.RPS + after.RPS) / 2
	}
	l.Plain, l.Floor = mean(l.PlainBefore, l.PlainAfter), mean(l.FloorBefore, l.FloorAfter)
	ratio := func(rps, base float64) float64 {
		if base <= 0 {
			return 0
		}
		return rps / base
	}
	l.Rows = nil
	add := func(name string, p *phase, rps float64, vsFloor bool) {
		if p == nil {
			return
		}
		r := limitRow{Name: name, RPS: rps, P50Ms: p.Latency.P50.Seconds() * 1000, P99Ms: p.Latency.P99.Seconds() * 1000, VsPlain: ratio(rps, l.Plain)}
		if vsFloor {
			r.VsFloor = ratio(rps, l.Floor)
		}
		l.Rows = append(l.Rows, r)
	}
	add(limitPlain, l.PlainBefore, l.Plain, false)
	add(limitFloor, l.FloorBefore, l.Floor, false)
	for _, p := range []*phase{l.Waiting, l.Fresh, l.Poll} {
		if p != nil {
			add(p.Target, p, p.RPS, true)
		}
	}
}

// row is the row named name (nil: none).
func (l *limitPhases) row(name string) *limitRow {
	for i := range l.Rows {
		if l.Rows[i].Name == name {
			return &l.Rows[i]
		}
	}
	return nil
}

// fetchProfile saves the server's CPU profile over the next seconds to
// file: GET /debug/pprof/profile on the management address.
func fetchProfile(ctx context.Context, adm *client.Admin, seconds int, file string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds)*time.Second+30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, adm.Base+"/debug/pprof/profile?seconds="+strconv.Itoa(seconds), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+adm.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	return os.WriteFile(file, b, 0o644)
}
