package hostile

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/token"
)

// trackFront polls tok on in until in's hub answers room's front from
// memory (it starts tracking the room at its first poll).
func trackFront(t *testing.T, in *systemtest.Instance, room, tok string) {
	t.Helper()
	claims, err := token.New(token.Config{Secret: systemtest.TestSecret}).Parse(tok, token.KindQueue)
	if err != nil {
		t.Fatal(err)
	}
	in.Position(room, tok)
	systemtest.WaitFor(t, "the hub to know the room", func() bool {
		_, ok := in.Parts.Hub.PositionNow(context.Background(), room, claims.Seq)
		return ok
	})
}

// TestFrontPollAnsweredFromMemory: polls at the front (positions 1–100)
// run no status script: each is answered from the hub's memory after one
// read of the room's event number — a plain HGET, shared by the polls in
// flight on the instance, so at most one round trip per poll.
func TestFrontPollAnsweredFromMemory(t *testing.T) {
	e := systemtest.NewEnv(t)
	cnt := systemtest.CountRedis(t, e)
	in := e.Start(map[string]string{"WR_TARGET_ACTIVE": "0"})
	var toks []string
	for i := 1; i <= 3; i++ {
		toks = append(toks, in.Enter(systemtest.User(i), "default").Str("queueToken"))
	}
	trackFront(t, in, "default", toks[0])

	before := cnt.Snapshot()
	const rounds = 20
	for range rounds {
		for i, tok := range toks {
			if r := in.Position("default", tok); r.Status != 200 || r.Str("status") != "WAITING" || r.Num("position") != int64(i+1) {
				t.Fatalf("poll of user%d = %d %s, want WAITING at %d", i+1, r.Status, r.Raw, i+1)
			}
		}
	}
	d := cnt.Since(before)
	polls := rounds * len(toks)
	if d["status"] != 0 || d["ev"] < 1 || d["ev"] > polls {
		t.Fatalf("%d front polls ran %d status scripts and %d event-number reads; want 0 and 1…%d", polls, d["status"], d["ev"], polls)
	}

	// Concurrent polls share the reads.
	before = cnt.Snapshot()
	var wg sync.WaitGroup
	for range 4 {
		for i, tok := range toks {
			wg.Go(func() {
				for range 10 {
					if r := in.Position("default", tok); r.Status != 200 || r.Num("position") != int64(i+1) {
						t.Errorf("concurrent poll of user%d = %d %s", i+1, r.Status, r.Raw)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	d = cnt.Since(before)
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
	e := systemtest.NewEnv(t)
	vars := map[string]string{"WR_TARGET_ACTIVE": "0"}
	a, b := e.Start(vars), e.Start(vars)
	const n = 12
	var toks []string
	for i := 1; i <= n; i++ {
		toks = append(toks, a.Enter(systemtest.User(i), "default").Str("queueToken"))
	}
	trackFront(t, a, "default", toks[0])
	trackFront(t, b, "default", toks[0])
	q := a.Parts.Queue
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
			for _, in := range []*systemtest.Instance{a, b} {
				if r := in.Position("default", toks[u-1]); r.Str("status") != "WAITING" || r.Num("position") != want.Position {
					t.Fatalf("%s: poll of user%d = %d %s, want WAITING at %d (ZRANK + 1)", step, u, r.Status, r.Raw, want.Position)
				}
			}
		}
	}
	for round := 1; len(users) > 2; round++ {
		a.SetTarget("default", round)
		if got := a.Admit("default"); got != 1 {
			t.Fatalf("round %d admitted %d, want 1", round, got)
		}
		front := users[0]
		for _, in := range []*systemtest.Instance{b, a} {
			if r := in.Position("default", toks[front-1]); r.Status != 200 || r.Str("status") != "READY" || r.Str("entryToken") == "" {
				t.Fatalf("round %d: poll right after the admission = %d %s, want READY with the entry token", round, r.Status, r.Raw)
			}
		}
		users = users[1:]
		samePlaces("after an admission")
		if r := systemtest.Do(t, "POST", b.Base+"/api/v1/rooms/default/leave", toks[users[1]-1], nil); r.Status != 204 {
			t.Fatalf("leave = %d %s", r.Status, r.Raw)
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
	e := systemtest.NewEnv(t)
	cnt := systemtest.CountRedis(t, e)
	in := e.Start(systemtest.Limited(map[string]string{"WR_TARGET_ACTIVE": "0"}))
	q := in.Parts.Queue
	issuer := token.New(token.Config{Secret: systemtest.TestSecret})
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
	before := cnt.Snapshot()
	var last systemtest.Response
	served := 0
	for range 20 {
		if last = in.Position("default", storm); last.Status != 200 {
			break
		}
		served++
	}
	// Band 3 s: one poll per 1.5 s, so the wait after the burst is just
	// under 1.5 s, rounded up.
	if ra := last.Header.Get("Retry-After"); served != 5 || last.Status != 429 || last.Str("error") != "rate_limited" || last.Str("message") == "" || (ra != "2" && ra != "1") {
		t.Fatalf("storm: %d served, then %d %v %s; want 5 (the burst), then 429 rate_limited with Retry-After 2",
			served, last.Status, last.Header.Get("Retry-After"), last.Raw)
	}
	for range 3 {
		if r := in.Position("default", calm); r.Status != 200 || r.Num("position") != 149 {
			t.Fatalf("another user's poll during the storm = %d %s", r.Status, r.Raw)
		}
		if r := in.Position("default", front); r.Status != 200 || r.Num("position") != 1 {
			t.Fatalf("a front user's poll during the storm = %d %s", r.Status, r.Raw)
		}
	}
	d := cnt.Since(before)
	if d["gcra"] != 0 || d["status"] != 0 || d["ev"] > 3 {
		t.Fatalf("26 polls ran %d rate-limit scripts, %d status scripts and %d event-number reads; want 0, 0 and at most 3 (the front's)", d["gcra"], d["status"], d["ev"])
	}
	if n := in.Metric("waitingroom_rate_limited_total"); n != 1 {
		t.Fatalf("rate_limited_total = %v, want 1", n)
	}
}
