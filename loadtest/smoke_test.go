package main

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/report"
	"waitingroom/loadtest/internal/scenario"
	"waitingroom/queue/queuetest"
	"waitingroom/server/pgstore"
	"waitingroom/server/pgstore/pgtest"
)

// The smoke runs drive a real server — the command (binary_test.go) on a
// Redis of its own, a fresh Postgres database, the admission loop every
// 100 ms — and assert counts only, never timings.

const (
	smokeSecret   = "smoke-secret-smoke-secret-smoke-secret-01"
	smokeAdmin    = "smoke-admin-token"
	smokePassword = "pw"
	smokeUsers    = 250
)

// smokeServer is one running server: its public and management base
// URLs, the URLs of its Redis (its own) and database, and its process id.
type smokeServer struct {
	base, admin, redis, db string
	pid                    int
}

func startSmokeServer(t *testing.T) smokeServer {
	t.Helper()
	return startSmokeServerWith(t, smokeUsers, nil)
}

// startSmokeServerWith starts a server over a database seeded with users
// users; env's variables replace or add to the smoke defaults.
func startSmokeServerWith(t *testing.T, users int, env map[string]string) smokeServer {
	t.Helper()
	commandPath(t) // a failed build fails the test before anything starts
	redisURL := queuetest.Server(t)
	dbURL := pgtest.URL(t)
	seedSmoke(t, dbURL, users)

	vars := map[string]string{
		"WR_JWT_SECRET":       smokeSecret,
		"WR_ADMIN_TOKEN":      smokeAdmin,
		"WR_BCRYPT_COST":      "4",
		"WR_ADMIT_INTERVAL":   "100ms",
		"WR_TARGET_ACTIVE":    "20",
		"WR_SHUTDOWN_TIMEOUT": "5s",
		"WR_RATE_LIMITS":      "off",
		// A loaded machine under -race must not turn into timeouts: the
		// smoke runs count errors, they do not measure speed.
		"WR_ORDER_TIMEOUT": "60s",
	}
	maps.Copy(vars, env)
	pub, adm := freeAddr(t), freeAddr(t)
	vars["WR_HTTP_ADDR"], vars["WR_ADMIN_ADDR"] = pub, adm
	vars["REDIS_URL"], vars["DATABASE_URL"] = redisURL, dbURL
	s := smokeServer{base: "http://" + pub, admin: "http://" + adm, redis: redisURL, db: dbURL}
	s.pid = startChild(t, vars, s)
	return s
}

// seedSmoke creates users users (password smokePassword) and one product
// in the database at dbURL.
func seedSmoke(t *testing.T, dbURL string, users int) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	store, err := pgstore.Open(context.Background(), dbURL, pgstore.Options{PoolSize: 2, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	hash, _ := bcrypt.GenerateFromPassword([]byte(smokePassword), bcrypt.MinCost)
	if _, err := store.Seed(context.Background(), pgstore.SeedOptions{Users: users, PasswordHash: hash, Products: 1, Stock: 1_000_000}); err != nil {
		t.Fatal(err)
	}
}

func (s smokeServer) args(extra ...string) []string {
	return append([]string{"--base", s.base, "--admin", s.admin, "--admin-token", smokeAdmin, "--timeout", "60s"}, extra...)
}

// roomState reads the default room through the server's admin API.
func (s smokeServer) roomState(t *testing.T) (client.RoomState, error) {
	return (&client.Admin{Base: s.admin, Token: smokeAdmin, Room: "default", HTTP: http.DefaultClient}).RoomState(t.Context())
}

// logOnFailure logs the printed report r when the test has failed.
func logOnFailure(t *testing.T, r report.Report) {
	t.Cleanup(func() {
		if t.Failed() {
			var b strings.Builder
			r.Print(&b)
			t.Log(b.String())
		}
	})
}

// writeReports writes rep to --out and --html as main does, and returns
// the HTML page.
func writeReports(t *testing.T, o *scenario.Options, rep report.Report) string {
	t.Helper()
	if err := report.WriteJSON(o.Out, rep); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteHTML(o.HTML, rep); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(o.HTML)
	if err != nil {
		t.Fatal(err)
	}
	return string(html)
}

func TestSmokeSeed(t *testing.T) {
	s := startSmokeServer(t)
	var o scenario.Options
	rep, err := runSeed(t.Context(), &o, s.args("--vus", "5", "--duration", "2s", "--password", smokePassword))
	if err != nil {
		t.Fatal(err)
	}
	r := rep.(*seedReport)
	logOnFailure(t, r)
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

// TestSmokeSurge runs a small surge of the shopper model — think times,
// no-shows, abandons, reloads, a burst and a trickle — and prints its ETA
// accuracy without judging it: the estimator's bar is measured by the
// benchmark, not here.
func TestSmokeSurge(t *testing.T) {
	// A short entry window and idle timeout: no-shows and those who gave
	// up free their places within seconds, so the small room keeps moving.
	s := startSmokeServerWith(t, 300, map[string]string{"WR_ENTRY_TTL": "20s", "WR_IDLE_TIMEOUT": "30s"})
	dir := t.TempDir()
	var o scenario.Options
	// Sized so the room moves for about half a minute: the estimator
	// withholds the ETA until it has measured orders and no-shows (about
	// ten seconds here), then the waiting users are shown estimates.
	args := s.args("-n", "300", "--over", "1s", "--transport", "mix", "--target", "30", "--max-duration", "3m",
		"--think-median", "2s", "--think-sigma", "0.5", "--no-shows", "3%", "--abandons", "10%", "--reloads", "20%",
		"--patience", "4s", "--burst", "90%", "--trickle-over", "3s",
		"--mint-tokens", "--jwt-secret", smokeSecret, "--out", filepath.Join(dir, "r.json"), "--html", filepath.Join(dir, "r.html"))
	rep, err := runSurge(t.Context(), &o, args)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.(*surgeReport)
	logOnFailure(t, r)
	if r.HitMaxDuration || r.Interrupted {
		t.Fatalf("the run did not finish: max duration %v, interrupted %v", r.HitMaxDuration, r.Interrupted)
	}
	t.Logf("shoppers: READY %d, ordered %d, no-shows %d, abandoned %d, reloaded %d; drained in %.1f s",
		r.Ready, r.Ordered, r.NoShows, r.Abandoned, r.Reloads, r.DrainSeconds)
	t.Logf("ETA, first estimate: %s", r.etaString())
	t.Logf("ETA over the wait: %s", r.etaWaitString())
	t.Logf("ETA by position: %s", r.etaBandString())
	if r.Entered != 300 || r.Ready+r.Abandoned != 300 || r.Ordered != r.Ready-r.NoShows || r.NoShows == 0 {
		t.Errorf("entered / READY + abandoned / ordered: got %d / %d + %d / %d (no-shows %d), want 300, 300, READY − no-shows, some no-shows",
			r.Entered, r.Ready, r.Abandoned, r.Ordered, r.NoShows)
	}
	if r.ErrorCount != 0 || r.AttemptErrors != 0 || r.Lost != 0 || r.Inversions != 0 || r.Gone != 0 {
		t.Errorf("errors %d (attempts %d), lost %d, FIFO inversions %d, gone %d: want 0 each (%v %v)", r.ErrorCount, r.AttemptErrors, r.Lost, r.Inversions, r.Gone, r.LostWhy, r.EnterFailures)
	}
	if r.Admissions != r.Ready || r.NoAdmitTime != 0 {
		t.Errorf("admissions compared: got %d (%d without a time), want %d", r.Admissions, r.NoAdmitTime, r.Ready)
	}
	if r.RoomSamples == 0 || r.SamplesOverLimit != 0 || r.MaxActive > 30 {
		t.Errorf("active: max %d of 30, %d of %d samples over", r.MaxActive, r.SamplesOverLimit, r.RoomSamples)
	}
	if r.ByTransport["sse"] == 0 || r.ByTransport["ws"] == 0 || r.ByTransport["poll"] == 0 {
		t.Errorf("users by transport: %v, want all three", r.ByTransport)
	}
	if r.ETA.Count == 0 || r.ETAWait.Count == 0 || len(r.ETASeries) == 0 {
		t.Errorf("ETA: %d first estimates, %d over the wait, %d seconds of series: want some of each", r.ETA.Count, r.ETAWait.Count, len(r.ETASeries))
	}
	// The run leaves the room as it found it: targetActive restored.
	if st, err := s.roomState(t); err != nil || st.TargetActive != 20 {
		t.Errorf("targetActive after the run: got %d (%v), want 20", st.TargetActive, err)
	}

	// The reports are written by main; write them as main does.
	page := writeReports(t, &o, rep)
	if n := strings.Count(page, "<svg"); n < 9 {
		t.Errorf("HTML report: %d charts, want at least 9", n)
	}
	if !strings.Contains(page, "ETA shown vs real remaining") {
		t.Errorf("HTML report: no ETA chart")
	}
}
