package fuzzroutes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"waitingroom/loadtest/internal/report"
	"waitingroom/loadtest/internal/scenario"
)

// At is the corpus a campaign of seed sends: the Probes first, then the
// generated cases.
func At(seed uint64) func(i int) Case {
	return func(i int) Case {
		if i < len(Probes) {
			c := Probes[i]
			if c.Note == "" {
				c.Note = "probe"
			}
			return c
		}
		return Generate(seed, i)
	}
}

// Run is the fuzz-routes scenario: args are its flags; o gets the common
// ones (of which only --out, --html and --timeout are used: the scenario
// starts everything it sends to).
func Run(ctx context.Context, o *scenario.Options, args []string) (report.Report, error) {
	fs := scenario.NewFlagSet("fuzz-routes", o)
	redisDefault := os.Getenv("REDIS_URL")
	if redisDefault == "" {
		redisDefault = "redis://127.0.0.1:6379/0"
	}
	n := fs.Int("n", 100_000, "requests in all: each case goes through every (front door, origin) pair, so the cases are n ÷ pairs (the probes first, then generated ones)")
	seed := fs.Uint64("seed", 1, "the seed of the generated cases: the same seed, the same cases")
	origins := fs.String("origins", strings.Join(OriginNames(), ","), "the origins, comma-separated")
	fronts := fs.String("fronts", strings.Join(Fronts, ","), "the front doors, comma-separated")
	workers := fs.Int("workers", 2, "keep-alive connections per pair")
	redisURL := fs.String("redis", redisDefault, "the waiting rooms' Redis (default $REDIS_URL); its database is --redis-db")
	redisDB := fs.Int("redis-db", 13, "the database of --redis the waiting rooms use: it must hold no key at the start, and is emptied at the end")
	serverBin := fs.String("server-bin", "", "the waitingroom binary (default: go build waitingroom/cmd/waitingroom into the run's folder)")
	show := fs.Int("show", 20, "reaches printed per pair (all are in --out)")
	if err := o.Parse(fs, args); err != nil {
		return nil, err
	}
	if *workers < 1 || *n < 1 {
		return nil, errors.New("fuzz-routes: --n and --workers must be positive")
	}
	cfg := Config{Origins: split(*origins), Fronts: split(*fronts), RedisURL: *redisURL, RedisDB: *redisDB, ServerBin: *serverBin, Log: os.Stderr}
	st, err := Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer st.Close() // also on the way out of an error; its own error is joined below
	rep := &Report{Scenario: "fuzz-routes", Seed: *seed, Workers: *workers, Protect: Protect, Show: *show}
	for _, name := range cfg.Origins {
		og, _ := originByName(name)
		rep.Origins = append(rep.Origins, name+": "+og.About)
	}
	if err := st.SelfCheck(); err != nil {
		rep.SelfCheck = "FAIL"
		return rep, errors.Join(err, st.Close())
	}
	rep.SelfCheck = "PASS (every origin ran and recorded its protected handlers when asked directly; every front door forwarded an unprotected request and queued the plain protected ones)"
	rep.Cases = max(*n/len(st.Pairs), 1)
	start := time.Now()
	res, err := st.Run(ctx, Campaign{Tag: "c", N: rep.Cases, At: At(*seed), Workers: *workers, Timeout: o.Timeout,
		Progress: func(done int) {
			el := time.Since(start).Seconds()
			fmt.Fprintf(os.Stderr, "%5.0fs  %d of %d requests, %.0f/s\n", el, done, rep.Cases*len(st.Pairs), float64(done)/el)
		}})
	rep.Result = res
	if res != nil && res.Seconds > 0 {
		rep.RPS = float64(res.Requests) / res.Seconds
	}
	err = errors.Join(err, st.Close())
	if err == nil && res != nil && len(res.Reaches) > 0 {
		err = fmt.Errorf("fuzz-routes: %d reaches: protected handlers ran without a pass", len(res.Reaches))
	}
	return rep, err
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}
