package ceiling

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/report"
	"waitingroom/queue"
	"waitingroom/server/ratelimit"
)

// unitCost is the Redis cost of one operation of one kind, measured over
// Ops of them.
type unitCost struct {
	Kind string `json:"kind"`
	Per  string `json:"per"` // what one operation is: an enter, a user stamped, …
	Ops  int    `json:"ops"`
	// Depth is how many of them shared one round trip (pipeline depth;
	// 1: each sent alone).
	Depth int `json:"depth"`
	// CPU is Redis's used_cpu (sys + user) per operation: everything
	// Redis spent, reading and writing the sockets included.
	CPU float64 `json:"cpuUs"`
	// Exec is commandstats usec per operation of the kind's own command
	// (the script, or the plain command): the execution alone.
	Exec      float64                `json:"execUs"`
	Commands  float64                `json:"commandsPerOp"` // INFO excluded
	ByCommand []measure.CommandCalls `json:"byCommand"`     // per operation, scripts' own calls included
	// Derived rows (admission per user, PUBLISH per instance) are worked
	// out from two measured rows and carry no command counts.
	Derived bool `json:"derived,omitempty"`
}

// costsRoom is the room the costs are measured in.
const costsRoom = "costs"

// The kinds the server batches (enter, status, event numbers, snapshots,
// PUBLISH) are sent in pipelines of --depth (default 10): a busy
// instance's batch (package internal/batch) is of that order; a lightly
// loaded one sends one or two scripts per round trip, and each then
// carries more of the socket work.

// unitCosts measures each kind in turn in one room holding cfg.base
// waiting users; the order matters (admission pops the first base users,
// leave takes later ones).
func (r *ceilingRun) unitCosts(ctx context.Context) ([]unitCost, error) {
	n, base := r.cfg.ops, r.cfg.base
	if base < 3*n {
		return nil, fmt.Errorf("ceiling: --costs needs --waiting at least 3 × --ops (%d)", 3*n)
	}
	if err := r.room(ctx, costsRoom, 0); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "ceiling: costs: %s users waiting first\n", report.Commas(base))
	if err := r.enterAll(ctx, costsRoom, ids("b", 0, base), 4, 100); err != nil {
		return nil, err
	}
	var out []unitCost
	for _, k := range r.kinds(n) {
		if ctx.Err() != nil {
			break
		}
		c, err := r.measure(ctx, k)
		if err != nil {
			return out, fmt.Errorf("ceiling: cost of %s: %w", k.kind, err)
		}
		fmt.Fprintf(os.Stderr, "ceiling: cost of %s: %.1f µs CPU, %.1f µs exec per %s\n", c.Kind, c.CPU, c.Exec, c.Per)
		out = append(out, c)
	}
	return append(out, derivedCosts(out, r.cfg.instances, r.cfg.depth)...), nil
}

// costKind is one kind to measure: run makes ops operations of it, in
// round trips of depth; setup (nil: none) runs before, unmeasured.
type costKind struct {
	kind, per string
	cmd       string // the command whose usec is the kind's execution
	ops       int
	depth     int
	setup     func(ctx context.Context) (teardown func(), err error)
	run       func(ctx context.Context) error
}

// measure runs one kind between two reads of Redis's counters.
func (r *ceilingRun) measure(ctx context.Context, k costKind) (unitCost, error) {
	teardown := func() {}
	if k.setup != nil {
		var err error
		if teardown, err = k.setup(ctx); err != nil {
			return unitCost{}, err
		}
	}
	defer teardown()
	before, err := r.rs.Read(ctx)
	if err != nil {
		return unitCost{}, err
	}
	if err := k.run(ctx); err != nil {
		return unitCost{}, err
	}
	after, err := r.rs.Read(ctx)
	if err != nil {
		return unitCost{}, err
	}
	after.ByCommand["info"]-- // the first read itself
	c := measure.RedisCostBetween(before, after, k.ops, 16)
	u := unitCost{Kind: k.kind, Per: k.per, Ops: k.ops, Depth: k.depth, CPU: c.CPUPerReqMicros, Commands: c.CommandsPerReq - 1/float64(k.ops),
		Exec: float64(after.Usec[k.cmd]-before.Usec[k.cmd]) / float64(k.ops)}
	for _, cc := range c.TopCommands {
		if cc.Name != "info" {
			u.ByCommand = append(u.ByCommand, cc)
		}
	}
	return u, nil
}

// kinds are the operations the server makes, in the order measured.
func (r *ceilingRun) kinds(n int) []costKind {
	q, room, d := r.q, costsRoom, r.cfg.depth
	rooms := make([]string, d)
	for i := range rooms {
		rooms[i] = room
	}
	waiting := ids("b", 0, n) // the first n waiting users: re-entered, read, stamped, then admitted
	ticks := n / 10
	return []costKind{
		{kind: "enter, new user", per: "enter", cmd: "evalsha", ops: n, depth: d, run: func(ctx context.Context) error {
			return r.enterAll(ctx, room, ids("f", 0, n), 1, d)
		}},
		{kind: "enter, user already waiting", per: "enter", cmd: "evalsha", ops: n, depth: d, run: func(ctx context.Context) error {
			return r.enterAll(ctx, room, waiting, 1, d)
		}},
		{kind: "status (poll at the front read by script)", per: "read", cmd: "evalsha", ops: n, depth: d, run: func(ctx context.Context) error {
			return chunks(ctx, waiting, 1, d, func(ctx context.Context, part []string) error {
				_, _, err := q.Statuses(ctx, room, part)
				return err
			})
		}},
		{kind: "event number (HGET; exact polls at the front)", per: "read", cmd: "hget", ops: n, depth: d, run: func(ctx context.Context) error {
			return repeat(ctx, n/d, func(ctx context.Context) error { _, err := q.EventNumbers(ctx, rooms); return err })
		}},
		{kind: "snapshot (hub resync, in sync)", per: "snapshot", cmd: "evalsha", ops: ticks, depth: d, run: func(ctx context.Context) error {
			held, err := heldOf(ctx, q, room, d)
			if err != nil {
				return err
			}
			return repeat(ctx, ticks/d, func(ctx context.Context) error { _, err := q.SnapshotsSince(ctx, rooms, held); return err })
		}},
		{kind: "presence stamp", per: "user stamped", cmd: "evalsha", ops: n, depth: n / 500, run: func(ctx context.Context) error {
			return q.Touch(ctx, room, waiting, 4*time.Second) // a front poller's grace
		}},
		r.limiterKind(n),
		{kind: "admission tick, nobody admitted", per: "tick", cmd: "evalsha", ops: ticks, depth: 1, run: func(ctx context.Context) error {
			return repeat(ctx, ticks, func(ctx context.Context) error { _, err := q.Admit(ctx, room, 8); return err })
		}},
		r.admitKind(n / 100),
		r.orderKind(n),
		{kind: "leave", per: "leave", cmd: "evalsha", ops: n, depth: 1, run: func(ctx context.Context) error {
			return chunks(ctx, ids("b", n, 2*n), 8, 1, func(ctx context.Context, part []string) error {
				_, err := q.Leave(ctx, room, part[0])
				return err
			})
		}},
		r.publishKind(n, 0),
		r.publishKind(n, r.cfg.instances),
	}
}

// admitPerTick is how many users each measured admission tick admits.
const admitPerTick = 100

// admitKind measures ticks admission ticks of admitPerTick users each.
func (r *ceilingRun) admitKind(ticks int) costKind {
	return costKind{kind: "admission tick, " + strconv.Itoa(admitPerTick) + " admitted", per: "tick", cmd: "evalsha", ops: ticks, depth: 1,
		setup: func(ctx context.Context) (func(), error) {
			target := int64(1 << 40)
			_, err := r.q.UpdateRoom(ctx, costsRoom, queue.RoomUpdate{Target: &target}, false, queue.RoomConfig{})
			return func() {}, err
		},
		run: func(ctx context.Context) error {
			return repeat(ctx, ticks, func(ctx context.Context) error {
				res, err := r.q.Admit(ctx, costsRoom, admitPerTick)
				if err == nil && len(res.Admitted) != admitPerTick {
					err = fmt.Errorf("admitted %d, want %d", len(res.Admitted), admitPerTick)
				}
				return err
			})
		}}
}

// orderKind measures an order's two scripts per admitted user: consume
// (the entry token spent, compare-then-delete) and release (the slot
// freed when the order ends), for the n users the admission kind
// admitted, each sent alone from 8 callers at once.
func (r *ceilingRun) orderKind(n int) costKind {
	var users, tokens []string
	return costKind{kind: "order: consume + release", per: "order", cmd: "evalsha", ops: n, depth: 1,
		setup: func(ctx context.Context) (func(), error) {
			m, err := r.rdb.HGetAll(ctx, r.q.RoomKey(costsRoom, "tokens")).Result()
			if err == nil && len(m) < n {
				err = fmt.Errorf("%d entry tokens, want %d", len(m), n)
			}
			for u, t := range m {
				users, tokens = append(users, u), append(tokens, t)
			}
			users, tokens = users[:min(n, len(users))], tokens[:min(n, len(tokens))]
			return func() {}, err
		},
		run: func(ctx context.Context) error {
			idx := make([]string, len(users))
			for i := range idx {
				idx[i] = strconv.Itoa(i)
			}
			return chunks(ctx, idx, 8, 1, func(ctx context.Context, part []string) error {
				i, _ := strconv.Atoi(part[0])
				c, err := r.q.Consume(ctx, costsRoom, users[i], tokens[i], 30*time.Second)
				if err == nil {
					_, err = r.q.Release(ctx, c)
				}
				return err
			})
		}}
}

// limiterKind measures rate-limit decisions (one GCRA script each) of
// distinct subjects, as enter's per-user limit takes them, from 8
// callers at once (the limiter batches them as under load).
func (r *ceilingRun) limiterKind(n int) costKind {
	lim := ratelimit.Limit{Rate: 20, Per: time.Minute, Burst: 10} // WR_LIMIT_ENTER_USER's default
	l := ratelimit.New(r.rdb, r.prefix)
	return costKind{kind: "limiter decision", per: "decision", cmd: "evalsha", ops: n, depth: 0, run: func(ctx context.Context) error {
		return chunks(ctx, ids("s", 0, n), 8, 1, func(ctx context.Context, part []string) error {
			_, err := l.Allow(ctx, "enter_user", part[0], lim)
			return err
		})
	}}
}

// publishKind measures n PUBLISHes of an admission event of ten users
// to a room's channel with subs pattern subscribers (one per instance,
// as the hub subscribes), each draining its messages.
func (r *ceilingRun) publishKind(n, subs int) costKind {
	channel := r.q.EventChannel(costsRoom)
	payload := `{"room":"costs","ev":123456,"ts":1764547200000,"waiting":987654,"active":200,"rate":"1000.000","pruned":0,` +
		`"serving":123456,"admitted":["1000001","1000002","1000003","1000004","1000005","1000006","1000007","1000008","1000009","1000010"]}`
	k := costKind{kind: fmt.Sprintf("PUBLISH, %d subscribed instances", subs), per: "publish", cmd: "publish", ops: n, depth: r.cfg.depth,
		run: func(ctx context.Context) error {
			return repeat(ctx, n/r.cfg.depth, func(ctx context.Context) error {
				p := r.rdb.Pipeline()
				for range r.cfg.depth {
					p.Publish(ctx, channel, payload)
				}
				_, err := p.Exec(ctx)
				return err
			})
		}}
	if subs > 0 {
		k.setup = func(ctx context.Context) (func(), error) { return r.subscribers(ctx, subs) }
	}
	return k
}

// subscribers starts subs pattern subscriptions to every room's events,
// each drained by a goroutine, and returns what stops them.
func (r *ceilingRun) subscribers(ctx context.Context, subs int) (func(), error) {
	var wg sync.WaitGroup
	var closers []func()
	for range subs {
		ps := r.rdb.PSubscribe(ctx, r.q.EventPattern())
		if _, err := ps.Receive(ctx); err != nil {
			_ = ps.Close()
			return nil, err
		}
		ch := ps.Channel(redis.WithChannelSize(100000))
		wg.Go(func() {
			for range ch {
			}
		})
		closers = append(closers, func() { _ = ps.Close() })
	}
	return func() {
		for _, c := range closers {
			c()
		}
		wg.Wait()
	}, nil
}

// derivedCosts works out the per-user cost of admission (the tick that
// admits minus the tick that admits nobody, per user) and the cost of
// PUBLISH per subscribed instance.
func derivedCosts(cs []unitCost, instances, depth int) []unitCost {
	find := func(prefix string) *unitCost {
		for i := range cs {
			if strings.HasPrefix(cs[i].Kind, prefix) {
				return &cs[i]
			}
		}
		return nil
	}
	var out []unitCost
	if idle, full := find("admission tick, nobody"), find("admission tick, "+strconv.Itoa(admitPerTick)); idle != nil && full != nil {
		out = append(out, unitCost{Kind: "admission, per user admitted", Per: "user admitted", Ops: full.Ops * admitPerTick, Depth: 1, Derived: true,
			CPU: (full.CPU - idle.CPU) / admitPerTick, Exec: (full.Exec - idle.Exec) / admitPerTick})
	}
	if none, some := find("PUBLISH, 0 "), find(fmt.Sprintf("PUBLISH, %d ", instances)); none != nil && some != nil {
		out = append(out, unitCost{Kind: "PUBLISH, per subscribed instance", Per: "publish × instance", Ops: some.Ops, Depth: depth, Derived: true,
			CPU: (some.CPU - none.CPU) / float64(instances), Exec: (some.Exec - none.Exec) / float64(instances)})
	}
	return out
}

// ids returns prefix+i for i in [from, to), decimal, as user ids.
func ids(prefix string, from, to int) []string {
	out := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, prefix+strconv.Itoa(1_000_000+i))
	}
	return out
}

// enterAll enters users into room, workers at once, in pipelines of depth.
func (r *ceilingRun) enterAll(ctx context.Context, room string, users []string, workers, depth int) error {
	return chunks(ctx, users, workers, depth, func(ctx context.Context, part []string) error {
		_, errs, err := r.q.Enters(ctx, room, part...)
		for _, e := range errs {
			err = cmpErr(err, e)
		}
		return err
	})
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// chunks calls fn with successive parts of items of up to size, from
// workers goroutines; the first error ends it.
func chunks(ctx context.Context, items []string, workers, size int, fn func(ctx context.Context, part []string) error) error {
	parts := make(chan []string)
	errc := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for p := range parts {
				if err := fn(ctx, p); err != nil {
					errc <- err
					return
				}
			}
		})
	}
	var err error
feed:
	for i := 0; i < len(items); i += size {
		select {
		case parts <- items[i:min(i+size, len(items))]:
		case err = <-errc:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(parts)
	wg.Wait()
	if err == nil && len(errc) > 0 {
		err = <-errc
	}
	return err
}

// repeat calls fn n times in turn; the first error ends it.
func repeat(ctx context.Context, n int, fn func(ctx context.Context) error) error {
	for range n {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(ctx); err != nil {
			return err
		}
	}
	return nil
}

// heldOf is what a hub in sync with room holds of its departed tickets,
// n times over: the server's re-reads send the list only when it differs
// (queue.GoneHeld), so that is the snapshot the server pays for.
func heldOf(ctx context.Context, q *queue.Queue, room string, n int) ([]queue.GoneHeld, error) {
	snaps, err := q.Snapshots(ctx, []string{room})
	if err != nil {
		return nil, err
	}
	sn := snaps[0]
	held := make([]queue.GoneHeld, n)
	for i := range held {
		held[i] = queue.GoneHeld{Known: true, Ev: sn.Ev, Serving: sn.Serving, Count: sn.GoneCount}
	}
	return held, nil
}
