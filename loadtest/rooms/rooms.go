package rooms

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strings"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/mint"
	"waitingroom/loadtest/internal/pace"
	"waitingroom/loadtest/internal/report"
	"waitingroom/loadtest/internal/scenario"
	"waitingroom/loadtest/internal/stream"
	"waitingroom/queue"
)

// instance is one running server: its public and management base URLs.
type instance struct {
	Base  string `json:"base"`
	Admin string `json:"admin"`
}

// roomsConfig is the rooms scenario's flags.
type roomsConfig struct {
	instances      []instance
	rooms, conns   int
	users, first   int
	target         int64
	prefix         string
	transport      string
	window, settle time.Duration
	gap, readyWait time.Duration
	password       string
	mt             *mint.Minter // nil: log in
	rs             *measure.RedisStats
}

// parseRoomsFlags reads and checks the rooms scenario's flags.
func parseRoomsFlags(o *scenario.Options, args []string) (roomsConfig, error) {
	fs := scenario.NewFlagSet("rooms", o)
	var c roomsConfig
	insts := fs.String("instances", "", "the running instances, comma-separated BASE=ADMIN pairs (public and management base URLs), e.g. http://127.0.0.1:8080=http://127.0.0.1:8081,http://127.0.0.1:8090=http://127.0.0.1:8091 (default: --base=--admin)")
	fs.IntVar(&c.rooms, "rooms", 1000, "idle rooms created beside the busy one for the second phase")
	fs.IntVar(&c.conns, "conns", 64, "room creations and deletions at a time (spread over the instances)")
	fs.IntVar(&c.users, "users", 50, "users who enter the busy room one after another in each phase")
	fs.Int64Var(&c.target, "target", 1_000_000, "the busy room's targetActive: capacity stays free for every user")
	fs.StringVar(&c.prefix, "prefix", "", "the run's room names: <prefix>-busy and <prefix>-00001 … (default: rb and 6 random hex digits)")
	fs.StringVar(&c.transport, "transport", "sse", "how a user waits for READY after entering: sse, ws or poll (GET position at pollAfterMs)")
	fs.DurationVar(&c.window, "window", 10*time.Second, "measured idle window of each phase: Redis and instance CPU")
	fs.DurationVar(&c.settle, "settle", 2*time.Second, "pause before each idle window (the rooms' creation and the instances' first ticks over them fall outside)")
	fs.DurationVar(&c.gap, "gap", 100*time.Millisecond, "each user enters after a random pause below this (0: at once), so entries fall at any point of the admission tick")
	fs.DurationVar(&c.readyWait, "ready-timeout", 30*time.Second, "a user not READY this long after entering counts as failed")
	minterFromFlags := mint.Flags(fs)
	fs.StringVar(&c.password, "password", "demo-pass", "password of the demo users (without --mint-tokens)")
	fs.IntVar(&c.first, "first-user", 1, "first user: user<k> with database id k; the lone phase uses --users from here, the other phase the next --users")
	redisFromFlags := measure.RedisFlag(fs)
	if err := o.Parse(fs, args); err != nil {
		return c, err
	}
	var err error
	if c.instances, err = parseInstances(*insts, o.Base, o.Admin); err != nil {
		return c, err
	}
	if c.prefix == "" {
		var salt [3]byte
		_, _ = rand.Read(salt[:])
		c.prefix = "rb" + hex.EncodeToString(salt[:])
	}
	switch {
	case c.rooms < 1 || c.conns < 1 || c.users < 1 || c.first < 1 || c.target < 1:
		return c, errors.New("rooms: --rooms, --conns, --users, --first-user and --target must be positive")
	case c.window <= 0 || c.settle < 0 || c.gap < 0 || c.readyWait <= 0:
		return c, errors.New("rooms: --window and --ready-timeout must be positive, --settle and --gap not negative")
	case c.transport != "sse" && c.transport != "ws" && c.transport != "poll":
		return c, fmt.Errorf("rooms: --transport %q: want sse, ws or poll", c.transport)
	case len(c.prefix) > 40 || !queue.ValidRoom(c.prefix):
		return c, fmt.Errorf("rooms: --prefix %q: want 1-40 of a-z 0-9 - _", c.prefix)
	}
	if c.mt, err = minterFromFlags(); err != nil {
		return c, fmt.Errorf("rooms: %w", err)
	}
	if c.rs, err = redisFromFlags(); err != nil {
		return c, fmt.Errorf("rooms: %w", err)
	}
	return c, nil
}

// parseInstances reads --instances: comma-separated BASE=ADMIN pairs; ""
// is the one instance of --base and --admin.
func parseInstances(list, base, admin string) ([]instance, error) {
	if strings.TrimSpace(list) == "" {
		return []instance{{Base: base, Admin: admin}}, nil
	}
	var out []instance
	for _, f := range strings.Split(list, ",") {
		b, a, ok := strings.Cut(strings.TrimSpace(f), "=")
		b, a = strings.TrimRight(strings.TrimSpace(b), "/"), strings.TrimRight(strings.TrimSpace(a), "/")
		if !ok || !isHTTP(b) || !isHTTP(a) {
			return nil, fmt.Errorf("rooms: --instances: %q: want BASE=ADMIN, two http(s) URLs", f)
		}
		out = append(out, instance{Base: b, Admin: a})
	}
	return out, nil
}

func isHTTP(u string) bool {
	return (strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")) && len(u) > len("https://")
}

// roomsRun is one run's shared state.
type roomsRun struct {
	cfg     roomsConfig
	ctx     context.Context
	apis    []*client.API     // per instance, the busy room's public API
	dialers []*stream.Dialer  // per instance (nil for --transport poll)
	admins  []*client.Admin   // per instance, Room unset
	rec     *measure.Recorder // every public call
	busy    string
}

// Run is the rooms scenario: the busy room alone (a phase), then R idle
// rooms created beside it (createRooms) and the same phase again, then the
// rooms deleted.
func Run(ctx context.Context, o *scenario.Options, args []string) (report.Report, error) {
	cfg, err := parseRoomsFlags(o, args)
	if err != nil {
		return nil, err
	}
	defer cfg.rs.Close()
	r := &roomsRun{cfg: cfg, ctx: ctx, rec: measure.NewRecorder(), busy: cfg.prefix + "-busy"}
	hc := client.New(8, o.Timeout)
	ahc := client.New(cfg.conns, o.Timeout)
	for _, in := range cfg.instances {
		r.apis = append(r.apis, &client.API{Base: in.Base, Room: r.busy, HTTP: hc, Rec: r.rec})
		r.admins = append(r.admins, &client.Admin{Base: in.Admin, Token: o.AdminToken, HTTP: ahc})
		var d *stream.Dialer
		if cfg.transport != "poll" {
			if d, err = stream.NewDialer(cfg.transport, in.Base, r.busy, o.Timeout, cfg.readyWait); err != nil {
				return nil, fmt.Errorf("rooms: %w", err)
			}
		}
		r.dialers = append(r.dialers, d)
	}
	rep := &roomsReport{Scenario: "rooms", Instances: cfg.instances, CPUs: runtime.NumCPU(), Rooms: cfg.rooms, Users: cfg.users,
		Transport: cfg.transport, Target: cfg.target, Prefix: cfg.prefix, BusyRoom: r.busy, Tokens: "login", RedisGiven: cfg.rs != nil}
	if cfg.mt != nil {
		rep.Tokens = "minted (kid " + cfg.mt.Kid + ")"
	}
	for _, in := range cfg.instances {
		if err := client.AwaitReady(ctx, in.Admin, 10*time.Second); err != nil {
			return nil, fmt.Errorf("rooms: %w", err)
		}
	}

	busyAdm := r.admin(0, r.busy)
	if err := busyAdm.Do(ctx, http.MethodPut, map[string]int64{"targetActive": cfg.target}, nil); err != nil {
		return nil, fmt.Errorf("rooms: creating the busy room: %w", err)
	}
	created := []string{r.busy}
	defer func() { rep.Cleanup = r.deleteRooms(context.WithoutCancel(ctx), created) }()

	fmt.Fprintf(os.Stderr, "rooms: busy room %s (targetActive %s) on %d instance(s); the lone phase\n", r.busy, report.Commas(int(cfg.target)), len(cfg.instances))
	rep.Lone = r.phase(0, cfg.first)
	if ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "rooms: creating %s idle rooms, %d at a time\n", report.Commas(cfg.rooms), cfg.conns)
		var names []string
		rep.Create, names = r.createRooms()
		created = append(created, names...)
	}
	if ctx.Err() == nil && rep.Create.Created > 0 {
		fmt.Fprintf(os.Stderr, "rooms: the phase among %s idle rooms\n", report.Commas(rep.Create.Created))
		rep.Among = r.phase(rep.Create.Created, cfg.first+cfg.users)
	}
	rep.Interrupted = ctx.Err() != nil
	rep.derive()
	if rep.Create != nil && rep.Create.Created == 0 {
		return rep, fmt.Errorf("rooms: no idle room could be created: %s", rep.Create.FirstError)
	}
	return rep, nil
}

// admin is instance i's admin API for room.
func (r *roomsRun) admin(i int, room string) *client.Admin {
	a := *r.admins[i%len(r.admins)]
	a.Room = room
	return &a
}

// phase is one phase with idle idle rooms present: the settle, the idle
// window, then the users first, first+1, … entering the busy room.
func (r *roomsRun) phase(idle, first int) *phaseResult {
	p := &phaseResult{IdleRooms: idle}
	if !pace.Sleep(r.ctx, r.cfg.settle) {
		return p
	}
	p.Window = r.idleWindow()
	if r.ctx.Err() == nil {
		p.Ready = r.readyLatency(first)
	}
	return p
}
