package main

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/server/token"
)

// redisCounter is a go-redis hook that counts, per kind, the commands one
// client sends: "status" (the status script), "gcra" (a rate-limit
// script), "enter" (a script on a room's ticket counter: the enter script,
// guarded or not), "limited enter" (one that also carries rate-limit keys:
// the enter limits decided inside it), "pass" (the scripts that spend,
// settle or hold a gateway pass: consume, release, restore, hold), "ev"
// (the reads of a room's event
// number that exact polls wait for) and "trips" (round trips: one per
// command sent alone, one per pipeline).
//
// A script is counted when Redis ran it: an EVALSHA answered NOSCRIPT
// (a Redis whose script cache has not seen the script yet, as a fresh one
// in CI has not; the cache is shared by every test on that Redis, so
// whether it knows a script depends on what ran before) is followed by
// the EVAL that runs it, and only that one counts. The instance's own
// loops (admission, sweeps, settings and room refreshes) run none of the
// kinds counted here, so on a test's own client and key prefix the counts
// are the test's requests alone.
type redisCounter struct {
	scripts map[string]string // SHA-1 → kind

	mu sync.Mutex
	n  map[string]int
}

// countRedis adds a counter to e's client. Scripts are told apart by the
// SHA-1 of their source, read from the repository, or by their keys.
func countRedis(t *testing.T, e *env) *redisCounter {
	t.Helper()
	c := &redisCounter{scripts: map[string]string{}, n: map[string]int{}}
	for kind, paths := range map[string][]string{
		"status": {"../../queue/scripts/status.lua"},
		"gcra":   {"../../server/ratelimit/gcra_lib.lua", "../../server/ratelimit/gcra.lua"},
		"pass/0": {"../../queue/scripts/consume.lua"},
		"pass/1": {"../../queue/scripts/release.lua"},
		"pass/2": {"../../queue/scripts/restore.lua"},
		"pass/3": {"../../queue/scripts/hold.lua"},
	} {
		var src []byte
		for _, path := range paths {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			src = append(src, b...)
		}
		sum := sha1.Sum(src)
		kind, _, _ = strings.Cut(kind, "/")
		c.scripts[hex.EncodeToString(sum[:])] = kind
	}
	e.rdb.AddHook(c)
	return c
}

func (c *redisCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *redisCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		c.count(cmd, err) // a command sent alone: its error is next's
		c.add("trips")
		return err
	}
}

func (c *redisCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			c.count(cmd, cmd.Err())
		}
		c.add("trips")
		return err
	}
}

// count counts cmd, once answered, by its kind; a script Redis did not
// know (NOSCRIPT) did not run and is not counted.
func (c *redisCounter) count(cmd redis.Cmder, err error) {
	if redis.HasErrorPrefix(err, "NOSCRIPT") {
		return
	}
	args := cmd.Args()
	switch cmd.Name() {
	case "evalsha":
		if sha, ok := args[1].(string); ok && c.scripts[sha] != "" {
			c.add(c.scripts[sha])
		}
		c.countByKeys(args)
	case "eval":
		if src, ok := args[1].(string); ok {
			sum := sha1.Sum([]byte(src))
			if kind := c.scripts[hex.EncodeToString(sum[:])]; kind != "" {
				c.add(kind)
			}
		}
	case "hget":
		if key, ok := args[1].(string); ok && strings.HasSuffix(key, ":stats") && args[2] == "ev" {
			c.add("ev")
		}
	}
}

// countByKeys counts a script by its keys (args: EVAL or EVALSHA's):
// "enter" when one is a room's ticket counter, "limited enter" when
// rate-limit keys come with it.
func (c *redisCounter) countByKeys(args []any) {
	n, ok := args[2].(int)
	if !ok || len(args) < 3+n {
		return
	}
	enter, limit := false, false
	for _, k := range args[3 : 3+n] {
		key, _ := k.(string)
		enter = enter || strings.HasSuffix(key, "}:seq")
		limit = limit || strings.Contains(key, ":rl:")
	}
	if enter {
		c.add("enter")
	}
	if enter && limit {
		c.add("limited enter")
	}
}

func (c *redisCounter) add(kind string) {
	c.mu.Lock()
	c.n[kind]++
	c.mu.Unlock()
}

// snapshot returns the counts so far.
func (c *redisCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.n))
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// since returns the counts added since before.
func (c *redisCounter) since(before map[string]int) map[string]int {
	out := c.snapshot()
	for k, v := range before {
		out[k] -= v
	}
	return out
}

// trackFront polls tok on in until in's hub answers room's front from
// memory (it starts tracking the room at its first poll).
func trackFront(t *testing.T, in *instance, room, tok string) {
	t.Helper()
	claims, err := token.New(token.Config{Secret: testSecret}).Parse(tok, token.KindQueue)
	if err != nil {
		t.Fatal(err)
	}
	in.position(room, tok)
	waitFor(t, "the hub to know the room", func() bool {
		_, ok := in.parts.Hub.PositionNow(context.Background(), room, claims.Seq)
		return ok
	})
}

// TestFrontPollAnsweredFromMemory: polls at the front (positions 1–100)
// run no status script: each is answered from the hub's memory after one
// read of the room's event number — a plain HGET, shared by the polls in
// flight on the instance, so at most one round trip per poll.
func TestFrontPollAnsweredFromMemory(t *testing.T) {
	e := newEnv(t)
	cnt := countRedis(t, e)
	in := e.start(map[string]string{"WR_TARGET_ACTIVE": "0"})
	var toks []string
	for i := 1; i <= 3; i++ {
		toks = append(toks, in.enter(user(i), "default").str("queueToken"))
	}
	trackFront(t, in, "default", toks[0])

	before := cnt.snapshot()
	const rounds = 20
	for range rounds {
		for i, tok := range toks {
			if r := in.position("default", tok); r.status != 200 || r.str("status") != "WAITING" || r.num("position") != int64(i+1) {
				t.Fatalf("poll of user%d = %d %s, want WAITING at %d", i+1, r.status, r.raw, i+1)
			}
		}
	}
	d := cnt.since(before)
	polls := rounds * len(toks)
	if d["status"] != 0 || d["ev"] < 1 || d["ev"] > polls {
		t.Fatalf("%d front polls ran %d status scripts and %d event-number reads; want 0 and 1…%d", polls, d["status"], d["ev"], polls)
	}

	// Concurrent polls share the reads.
	before = cnt.snapshot()
	var wg sync.WaitGroup
	for range 4 {
		for i, tok := range toks {
			wg.Go(func() {
				for range 10 {
					if r := in.position("default", tok); r.status != 200 || r.num("position") != int64(i+1) {
						t.Errorf("concurrent poll of user%d = %d %s", i+1, r.status, r.raw)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	d = cnt.since(before)
	if d["status"] != 0 || d["ev"] > 4*len(toks)*10 {
		t.Fatalf("120 concurrent front polls ran %d status scripts and %d event-number reads; want 0 and at most 120", d["status"], d["ev"])
	}
	t.Logf("120 concurrent front polls: %d event-number reads", d["ev"])
}

// TestFrontPollSeesReadyRightAfterAdmission: the poll that follows an
// admission — on the instance that ran it or on another — says READY
// with the entry token, never WAITING or 404; the poll that follows a
// departure ahead says the new place; and the positions polled equal
// Redis's ZRANK + 1.
func TestFrontPollSeesReadyRightAfterAdmission(t *testing.T) {
	e := newEnv(t)
	vars := map[string]string{"WR_TARGET_ACTIVE": "0"}
	a, b := e.start(vars), e.start(vars)
	const n = 12
	var toks []string
	for i := 1; i <= n; i++ {
		toks = append(toks, a.enter(user(i), "default").str("queueToken"))
	}
	trackFront(t, a, "default", toks[0])
	trackFront(t, b, "default", toks[0])
	q := a.parts.Queue
	users := make([]int, n)
	for i := range users {
		users[i] = i + 1
	}
	// samePlaces checks every waiting user's poll on both instances
	// against Redis.
	samePlaces := func(step string) {
		t.Helper()
		for _, u := range users {
			want, err := q.Status(context.Background(), "default", strconv.Itoa(u)) // user N has id N
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range []*instance{a, b} {
				if r := in.position("default", toks[u-1]); r.str("status") != "WAITING" || r.num("position") != want.Position {
					t.Fatalf("%s: poll of user%d = %d %s, want WAITING at %d (ZRANK + 1)", step, u, r.status, r.raw, want.Position)
				}
			}
		}
	}
	for round := 1; len(users) > 2; round++ {
		a.setTarget("default", round)
		if got := a.admit("default"); got != 1 {
			t.Fatalf("round %d admitted %d, want 1", round, got)
		}
		front := users[0]
		for _, in := range []*instance{b, a} {
			if r := in.position("default", toks[front-1]); r.status != 200 || r.str("status") != "READY" || r.str("entryToken") == "" {
				t.Fatalf("round %d: poll right after the admission = %d %s, want READY with the entry token", round, r.status, r.raw)
			}
		}
		users = users[1:]
		samePlaces("after an admission")
		if r := do(t, "POST", b.base+"/api/v1/rooms/default/leave", toks[users[1]-1], nil); r.status != 204 {
			t.Fatalf("leave = %d %s", r.status, r.raw)
		}
		users = append(users[:1], users[2:]...)
		samePlaces("after a departure")
	}
}

// TestPollLimitInMemory: with the limits on, polls make no rate-limit
// round trip: one user's refresh storm is refused (429, the contract's
// JSON, Retry-After) by this instance's memory while other users' polls —
// behind the front from memory, at the front after one shared read — are
// served, and neither runs a status or rate-limit script.
func TestPollLimitInMemory(t *testing.T) {
	e := newEnv(t)
	cnt := countRedis(t, e)
	in := e.start(limited(map[string]string{"WR_TARGET_ACTIVE": "0"}))
	q := in.parts.Queue
	issuer := token.New(token.Config{Secret: testSecret})
	toks := map[string]string{}
	for i := range 150 {
		u := "p" + strconv.Itoa(i)
		st, err := q.Enter(context.Background(), "default", u)
		if err != nil {
			t.Fatal(err)
		}
		if toks[u], err = issuer.IssueQueue(u, "default", st.Ticket, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	trackFront(t, in, "default", toks["p0"])
	storm, calm, front := toks["p149"], toks["p148"], toks["p0"]
	before := cnt.snapshot()
	var last response
	served := 0
	for range 20 {
		if last = in.position("default", storm); last.status != 200 {
			break
		}
		served++
	}
	// Band 3 s: one poll per 1.5 s, so the wait after the burst is just
	// under 1.5 s, rounded up.
	if ra := last.header.Get("Retry-After"); served != 5 || last.status != 429 || last.str("error") != "rate_limited" || last.str("message") == "" || (ra != "2" && ra != "1") {
		t.Fatalf("storm: %d served, then %d %v %s; want 5 (the burst), then 429 rate_limited with Retry-After 2",
			served, last.status, last.header.Get("Retry-After"), last.raw)
	}
	for range 3 {
		if r := in.position("default", calm); r.status != 200 || r.num("position") != 149 {
			t.Fatalf("another user's poll during the storm = %d %s", r.status, r.raw)
		}
		if r := in.position("default", front); r.status != 200 || r.num("position") != 1 {
			t.Fatalf("a front user's poll during the storm = %d %s", r.status, r.raw)
		}
	}
	d := cnt.since(before)
	if d["gcra"] != 0 || d["status"] != 0 || d["ev"] > 3 {
		t.Fatalf("26 polls ran %d rate-limit scripts, %d status scripts and %d event-number reads; want 0, 0 and at most 3 (the front's)", d["gcra"], d["status"], d["ev"])
	}
	if n := in.metric("waitingroom_rate_limited_total"); n != 1 {
		t.Fatalf("rate_limited_total = %v, want 1", n)
	}
}
