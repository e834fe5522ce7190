package ceiling

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/pace"
	"waitingroom/loadtest/internal/report"
	"waitingroom/loadtest/internal/scenario"
	"waitingroom/queue"
)

// ceilingConfig is the ceiling scenario's flags.
type ceilingConfig struct {
	url       string
	conns     []int
	pipeline  int
	dur       time.Duration
	steps     bool // run the ceiling steps (off with --no-ceiling)
	costs     bool
	ops       int // operations per kind (--costs)
	depth     int // pipeline depth of the batched kinds (--costs)
	base      int // users waiting in the room while costs are measured
	instances int // pattern subscribers for the PUBLISH cost
	fill      int
	idle      time.Duration
	// cluster (--cluster) and parts (--parts): the sharded pre-queue's
	// steps on a Redis Cluster instead of the one-shard steps.
	cluster string
	parts   []int
}

func parseCeilingFlags(o *scenario.Options, args []string) (ceilingConfig, error) {
	fs := scenario.NewFlagSet("ceiling", o)
	var c ceilingConfig
	fs.StringVar(&c.url, "redis", "", "Redis URL to drive (required), e.g. redis://127.0.0.1:6432/0; use a Redis nobody else uses")
	conns := fs.String("conns", "1,2,4,8,16", "connection counts to step through (comma-separated, ascending); stops early once the enter rate stops rising")
	fs.IntVar(&c.pipeline, "pipeline", 100, "enter scripts per pipeline")
	fs.DurationVar(&c.dur, "duration", 3*time.Second, "measured time per step")
	noCeiling := fs.Bool("no-ceiling", false, "skip the ceiling steps (run only --costs and/or --fill)")
	fs.BoolVar(&c.costs, "costs", false, "also measure the Redis CPU of one operation of each kind")
	fs.IntVar(&c.depth, "depth", 10, "--costs: scripts per round trip for the kinds the server batches (enter, status, event number, snapshot, PUBLISH)")
	fs.IntVar(&c.ops, "ops", 20000, "--costs: operations per kind (snapshots and admission ticks: a tenth)")
	fs.IntVar(&c.base, "waiting", 100000, "--costs: users waiting in the room while the costs are measured")
	fs.IntVar(&c.instances, "instances", 8, "--costs: pattern subscribers (one per server instance) for the PUBLISH cost")
	fs.IntVar(&c.fill, "fill", 0, "also fill one room with N waiting users and report used_memory per user (0: no)")
	fs.DurationVar(&c.idle, "idle-timeout", 5*time.Minute, "--costs: the idle timeout the admission ticks run with (the server's WR_IDLE_TIMEOUT)")
	fs.StringVar(&c.cluster, "cluster", "", "Redis Cluster seed addresses (host:port,…): drive the sharded pre-queue's enter there, one step per --parts, with --conns' largest count, and report each master's Redis CPU (instead of the one-shard steps)")
	partsList := fs.String("parts", "1,2,3", "--cluster: the numbers of pre-queue parts (prequeueParts) to step through")
	if err := o.Parse(fs, args); err != nil {
		return c, err
	}
	c.steps = !*noCeiling
	for _, f := range strings.Split(*conns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return c, fmt.Errorf("ceiling: --conns %q: want positive integers", *conns)
		}
		c.conns = append(c.conns, n)
	}
	for _, f := range strings.Split(*partsList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > queue.MaxPrequeueParts {
			return c, fmt.Errorf("ceiling: --parts %q: want integers from 1 to %d", *partsList, queue.MaxPrequeueParts)
		}
		c.parts = append(c.parts, n)
	}
	switch {
	case c.url == "" && c.cluster == "":
		return c, errors.New("ceiling: --redis (or --cluster) is required")
	case c.pipeline < 1 || c.dur <= 0 || c.ops < 100 || c.depth < 1 || c.depth > c.ops/10 || c.base < 0 || c.instances < 1 || c.fill < 0:
		return c, errors.New("ceiling: --pipeline, --duration, --instances must be positive, --ops at least 100, --depth from 1 to --ops/10, --waiting and --fill not negative")
	}
	return c, nil
}

// ceilingReport is what the ceiling scenario measured.
type ceilingReport struct {
	Scenario string        `json:"scenario"`
	Redis    string        `json:"redis"`
	Pipeline int           `json:"pipeline"`
	Steps    []ceilingStep `json:"steps,omitempty"`
	Peak     *ceilingStep  `json:"peak,omitempty"`
	Costs    []unitCost    `json:"costs,omitempty"`
	Base     int           `json:"base,omitempty"` // users waiting while costs were measured
	Fill     *fillResult   `json:"fill,omitempty"`
	Parts    []partsStep   `json:"parts,omitempty"`
	// Interrupted: Ctrl-C came before the end; later parts are missing.
	Interrupted bool `json:"interrupted"`
}

// ceilingStep is one step: conns connections for seconds.
type ceilingStep struct {
	Conns   int     `json:"conns"`
	Enters  int64   `json:"enters"`
	Seconds float64 `json:"seconds"`
	Rate    float64 `json:"entersPerSecond"`
	// RedisCore is Redis's CPU time over the step ÷ the step's time: 1.0
	// is one core fully busy (Redis runs commands on one thread).
	RedisCore   float64 `json:"redisCore"`
	CPUPerEnter float64 `json:"redisCpuPerEnterUs"`
	// ExecPerEnter is commandstats' usec of the enter script per enter:
	// the execution alone, without reading and writing the sockets.
	ExecPerEnter float64 `json:"execPerEnterUs"`
	Errors       int64   `json:"errors"`
}

// ceilingRun is one run's shared state.
type ceilingRun struct {
	cfg    ceilingConfig
	rdb    *redis.Client
	q      *queue.Queue
	rs     *measure.RedisStats
	prefix string
}

// Run is the ceiling scenario: args are its flags; o gets the common ones.
func Run(ctx context.Context, o *scenario.Options, args []string) (report.Report, error) {
	cfg, err := parseCeilingFlags(o, args)
	if err != nil {
		return nil, err
	}
	if cfg.cluster != "" {
		rep := &ceilingReport{Scenario: "ceiling", Pipeline: cfg.pipeline}
		err := runParts(ctx, cfg, rep)
		rep.Interrupted = ctx.Err() != nil
		return rep, err
	}
	opt, err := redis.ParseURL(cfg.url)
	if err != nil {
		return nil, fmt.Errorf("ceiling: --redis: %w", err)
	}
	opt.PoolSize = max(opt.PoolSize, slices.Max(cfg.conns)+cfg.instances+4)
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("ceiling: %w", err)
	}
	var salt [4]byte
	_, _ = rand.Read(salt[:])
	r := &ceilingRun{cfg: cfg, rdb: rdb, rs: &measure.RedisStats{Client: rdb}, prefix: "cap" + hex.EncodeToString(salt[:]) + ":"}
	r.q = queue.New(rdb, queue.Options{Prefix: r.prefix, IdleTimeout: cfg.idle})
	defer r.cleanup(context.WithoutCancel(ctx))
	rep := &ceilingReport{Scenario: "ceiling", Redis: opt.Addr, Pipeline: cfg.pipeline}
	if cfg.steps {
		if err := r.ceiling(ctx, rep); err != nil {
			return rep, err
		}
	}
	if cfg.costs && ctx.Err() == nil {
		rep.Base = cfg.base
		if rep.Costs, err = r.unitCosts(ctx); err != nil {
			return rep, err
		}
	}
	if cfg.fill > 0 && ctx.Err() == nil {
		if rep.Fill, err = r.fillRoom(ctx); err != nil {
			return rep, err
		}
	}
	rep.Interrupted = ctx.Err() != nil
	return rep, nil
}

// ceiling runs the steps until the rate stops rising: a step less than 5 %
// above the best so far, twice in a row, ends it.
func (r *ceilingRun) ceiling(ctx context.Context, rep *ceilingReport) error {
	flat := 0
	for i, k := range r.cfg.conns {
		room := "ceil" + strconv.Itoa(i)
		if err := r.room(ctx, room, 0); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "ceiling: %d connections × pipelines of %d, %v\n", k, r.cfg.pipeline, r.cfg.dur)
		st, err := r.step(ctx, room, k)
		if err != nil {
			return err
		}
		rep.Steps = append(rep.Steps, st)
		r.dropRoom(ctx, room)
		if rep.Peak == nil || st.Rate > rep.Peak.Rate*1.05 {
			flat = 0
		} else if flat++; flat == 2 {
			break
		}
		if rep.Peak == nil || st.Rate > rep.Peak.Rate {
			rep.Peak = &rep.Steps[len(rep.Steps)-1]
		}
		if ctx.Err() != nil {
			break
		}
	}
	if rep.Peak != nil {
		p := *rep.Peak // Steps may have grown since
		rep.Peak = &p
	}
	return nil
}

// step drives k connections of pipelined fresh enters into room for the
// step's duration.
func (r *ceilingRun) step(ctx context.Context, room string, k int) (ceilingStep, error) {
	before, err := r.rs.Read(ctx)
	if err != nil {
		return ceilingStep{}, err
	}
	run, cancel := context.WithTimeout(ctx, r.cfg.dur)
	defer cancel()
	start := time.Now()
	enters, errs := drive(run, k, r.cfg.pipeline, func(ctx context.Context, ids []string) ([]error, error) {
		_, es, err := r.q.Enters(ctx, room, ids...)
		return es, err
	})
	secs := time.Since(start).Seconds()
	after, err := r.rs.Read(ctx)
	if err != nil {
		return ceilingStep{}, err
	}
	n := enters
	st := ceilingStep{Conns: k, Enters: n, Seconds: secs, Rate: float64(n) / secs, Errors: errs,
		RedisCore: (after.CPU - before.CPU) / secs}
	if n > 0 {
		st.CPUPerEnter = (after.CPU - before.CPU) * 1e6 / float64(n)
		st.ExecPerEnter = float64(after.Usec["evalsha"]-before.Usec["evalsha"]) / float64(n)
	}
	return st, nil
}

// room creates room (targetActive target, a long entry window).
func (r *ceilingRun) room(ctx context.Context, room string, target int64) error {
	if err := r.q.EnsureRoom(ctx, room, queue.RoomConfig{Target: target, EntryTTL: time.Hour}); err != nil {
		return fmt.Errorf("ceiling: room %s: %w", room, err)
	}
	return nil
}

// dropRoom deletes room's keys and waits a moment, so that the freeing
// of a large queue (which Redis may do in the background) falls outside
// the next measurement.
func (r *ceilingRun) dropRoom(ctx context.Context, room string) {
	r.deleteMatching(ctx, r.q.RoomKey(room, "*"))
	pace.Sleep(ctx, time.Second)
}

// cleanup deletes every key of the run.
func (r *ceilingRun) cleanup(ctx context.Context) {
	r.deleteMatching(ctx, r.prefix+"*")
}

func (r *ceilingRun) deleteMatching(ctx context.Context, pattern string) {
	iter := r.rdb.Scan(ctx, 0, escapeGlob(pattern), 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	for i := 0; i < len(keys); i += 500 {
		_ = r.rdb.Unlink(ctx, keys[i:min(i+500, len(keys))]...).Err()
	}
}

// escapeGlob escapes the braces of a room's hash tag, which are not glob
// characters, and the brackets, which are; a trailing '*' stays a glob.
func escapeGlob(pattern string) string {
	body, star := strings.CutSuffix(pattern, "*")
	r := strings.NewReplacer(`[`, `\[`, `]`, `\]`, `?`, `\?`, `*`, `\*`)
	body = r.Replace(body)
	if star {
		body += "*"
	}
	return body
}

// drive runs conns connections, each entering pipeline fresh users a
// batch with enter until run ends, and returns the users entered and the
// failures (a failed batch, or a user's own error).
func drive(run context.Context, conns, pipeline int, enter func(context.Context, []string) ([]error, error)) (enters, errs int64) {
	var entered, failed atomic.Int64
	var wg sync.WaitGroup
	for c := range conns {
		wg.Go(func() {
			ids := make([]string, pipeline)
			for n := 0; run.Err() == nil; n++ {
				for j := range ids {
					ids[j] = fmt.Sprintf("%d-%d-%d", c, n, j)
				}
				es, err := enter(context.WithoutCancel(run), ids)
				if err != nil {
					failed.Add(1)
					continue
				}
				for _, e := range es {
					if e != nil {
						failed.Add(1)
					}
				}
				entered.Add(int64(len(ids)))
			}
		})
	}
	wg.Wait()
	return entered.Load(), failed.Load()
}
