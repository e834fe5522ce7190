package seed

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/report"
	"waitingroom/loadtest/internal/scenario"
	"waitingroom/loadtest/internal/smoke"
	"waitingroom/server/pgstore"
)

// TestSeedReportTellsRefusalsFromFailures: a 429 is layer 1 refusing the
// loop, not an order that failed; the report counts the two apart and says
// why the refusals happened and how to run without them.
func TestSeedReportTellsRefusalsFromFailures(t *testing.T) {
	r := &seedReport{Scenario: "seed", VUs: 20, Seconds: 60, Endpoints: map[string]measure.Summary{
		"login":    {Count: 20, Codes: map[int]int{http.StatusOK: 20}},
		"enter":    {Count: 2400, Codes: map[int]int{http.StatusOK: 280, http.StatusTooManyRequests: 2120}},
		"position": {Count: 300, Codes: map[int]int{http.StatusOK: 300}},
		"orders":   {Count: 583, Codes: map[int]int{http.StatusCreated: 280, http.StatusTooManyRequests: 300, http.StatusServiceUnavailable: 2, measure.NoResponse: 1}},
	}}
	r.count()
	if r.Orders != 280 || r.FailedOrders != 3 || r.Refused["orders"] != 300 || r.Refused["enter"] != 2120 || len(r.Refused) != 2 {
		t.Fatalf("orders %d, failed %d, refused %v: want 280, 3 (the 503s and the lost one), orders 300 and enter 2120", r.Orders, r.FailedOrders, r.Refused)
	}
	var b strings.Builder
	r.Print(&b)
	out := b.String()
	for _, want := range []string{
		"failed orders (not 201, not 429)   3",
		"orders refused by layer 1 (429)    300",
		"LAYER 1 REFUSED PART OF THIS RUN: 2,420 requests answered 429 (enter 2,120, orders 300)",
		"20 users each entering about 120 and ordering about 29 times a minute, all from one address",
		"WR_RATE_LIMITS=off make run CROWD=0",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}

	clean := &seedReport{Scenario: "seed", VUs: 1, Seconds: 1, Endpoints: map[string]measure.Summary{
		"orders": {Count: 5, Codes: map[int]int{http.StatusCreated: 5}},
	}}
	clean.count()
	b.Reset()
	clean.Print(&b)
	if strings.Contains(b.String(), "LAYER 1") || clean.FailedOrders != 0 || len(clean.Refused) != 0 {
		t.Errorf("a run without 429s: failed %d, refused %v, report:\n%s", clean.FailedOrders, clean.Refused, b.String())
	}
}

// TestSmokeSeedWithLayer1 runs the seed against a server whose per-user
// limits bite at the second cycle (two enters and one order a minute):
// the orders they refuse are counted as refused, not failed.
func TestSmokeSeedWithLayer1(t *testing.T) {
	s := smoke.StartWith(t, smoke.Users, map[string]string{
		"WR_RATE_LIMITS":      "on",
		"WR_LIMIT_ENTER_USER": "2/1m:2",
		"WR_LIMIT_ORDER_USER": "1/1m:1",
	})
	var o scenario.Options
	rep, err := Run(t.Context(), &o, s.Args("--vus", "3", "--duration", "4s", "--password", smoke.Password))
	if err != nil {
		t.Fatal(err)
	}
	r := rep.(*seedReport)
	smoke.LogOnFailure(t, r)
	if r.Orders == 0 || r.Refused["orders"] == 0 {
		t.Errorf("orders %d, refused %v: want some of each (the second order of each user is refused)", r.Orders, r.Refused)
	}
	if r.FailedOrders != 0 {
		t.Errorf("failed orders %d: want 0, the 429s are refusals (%s)", r.FailedOrders, r.Endpoints["orders"].CodesString())
	}
	var b strings.Builder
	r.Print(&b)
	if !strings.Contains(b.String(), "LAYER 1 REFUSED PART OF THIS RUN") || !strings.Contains(b.String(), "WR_RATE_LIMITS=off") {
		t.Errorf("the report does not say that layer 1 refused the run:\n%s", b.String())
	}
}

// TestSeedLoginsPastBusyBcryptSlots: the seed logs its users in before the
// run. Sent all at once to a server with one BCrypt slot, the logins
// queued past the two seconds a login waits for a slot and got 503, and
// the run failed before it began (seen with the default 20 users on a busy
// 2-core machine). Hashes of cost 12 (about 0.25 s a verify) make 12
// logins in a row take longer than that wait on any machine.
func TestSeedLoginsPastBusyBcryptSlots(t *testing.T) {
	const users = 12
	s := smoke.StartWith(t, 0, map[string]string{"WR_BCRYPT_CONCURRENCY": "1"})
	hash, err := bcrypt.GenerateFromPassword([]byte(smoke.Password), 12)
	if err != nil {
		t.Fatal(err)
	}
	store, err := pgstore.Open(t.Context(), s.DB, pgstore.Options{PoolSize: 2, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.Seed(context.Background(), pgstore.SeedOptions{Users: users, PasswordHash: hash})
	store.Close()
	if err != nil {
		t.Fatal(err)
	}

	rec := measure.NewRecorder()
	a := &client.API{Base: s.Base, Room: "default", HTTP: client.New(users, time.Minute), Rec: rec}
	defer a.HTTP.CloseIdleConnections()
	tokens, err := loginAll(t.Context(), a, users, smoke.Password)
	if err != nil {
		t.Fatalf("%v (login: %s)", err, rec.Summary("login").CodesString())
	}
	for i, tok := range tokens {
		if tok == "" {
			t.Errorf("user%d: no access token", i+1)
		}
	}
}

func TestSmokeSeed(t *testing.T) {
	s := smoke.Start(t)
	var o scenario.Options
	rep, err := Run(t.Context(), &o, s.Args("--vus", "5", "--duration", "2s", "--password", smoke.Password))
	if err != nil {
		t.Fatal(err)
	}
	r := rep.(*seedReport)
	smoke.LogOnFailure(t, r)
	if r.Orders == 0 {
		t.Errorf("orders: got 0, want some")
	}
	if r.FailedOrders != 0 || r.Polls404 != 0 {
		t.Errorf("failed orders %d, polls lost to 404 %d: want 0, 0", r.FailedOrders, r.Polls404)
	}
	for _, ep := range seedEndpoints {
		e := r.Endpoints[ep]
		for code, n := range e.Codes {
			if code == measure.NoResponse || code >= 500 {
				t.Errorf("%s: %d × %s", ep, n, e.CodesString())
			}
		}
	}
	if r.Hold == nil || r.Hold.Count == 0 {
		t.Errorf("DB connection hold: got %+v (%s), want samples", r.Hold, r.HoldError)
	}
}

// Reports without a page of their own are written as text.
func TestSeedHTMLReportIsText(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seed.html")
	if err := report.WriteHTML(path, &seedReport{Scenario: "seed", Seconds: 1, Endpoints: map[string]measure.Summary{}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "<pre>") || !strings.Contains(string(b), "seed scenario") {
		t.Errorf("seed page: want the printed report in <pre>:\n%s", b)
	}
}
