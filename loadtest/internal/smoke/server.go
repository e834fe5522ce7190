package smoke

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/report"
	"waitingroom/loadtest/internal/scenario"
	"waitingroom/queue/queuetest"
	"waitingroom/server/pgstore"
	"waitingroom/server/pgstore/pgtest"
)

// The smoke server's configuration: its JWT secret, admin token, the
// seeded users' password and how many users Start seeds.
const (
	Secret     = "smoke-secret-smoke-secret-smoke-secret-01"
	AdminToken = "smoke-admin-token"
	Password   = "pw"
	Users      = 250
)

// Server is one running server: its public and management base
// URLs, the URLs of its Redis (its own) and database ("" for none), its
// room ("" for default) and its process id.
type Server struct {
	Base, Admin, Redis, DB, Room string
	PID                          int
}

// Start starts a server over a database seeded with Users users.
func Start(t *testing.T) Server {
	t.Helper()
	return StartWith(t, Users, nil)
}

// StartWith starts a server over a database seeded with users
// users; env's variables replace or add to the smoke defaults.
func StartWith(t *testing.T, users int, env map[string]string) Server {
	t.Helper()
	return StartInstances(t, 1, users, env)[0]
}

// StartInstances starts n instances of the server on one Redis and one
// database (seeded with users users), each on addresses of its own, with
// the same configuration: env's variables replace or add to the smoke
// defaults.
func StartInstances(t *testing.T, n, users int, env map[string]string) []Server {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no extra processes") // before the build, Redis and the database
	}
	commandPath(t) // a failed build fails the test before anything starts
	redisURL := queuetest.Server(t)
	dbURL := pgtest.URL(t)
	seedSmoke(t, dbURL, users)
	ss := make([]Server, n)
	for i := range ss {
		ss[i] = startOn(t, redisURL, dbURL, env)
	}
	return ss
}

// StartGateway starts a server in gateway mode in front of upstream, on a
// Redis of its own and no database: DATABASE_URL unset, as a shop's first
// try has it. WR_ROOMS is sale unless env says otherwise, and WR_PROTECT
// "GET /checkout/*=sale"; env's variables replace or add to the defaults.
func StartGateway(t *testing.T, upstream string, env map[string]string) Server {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no extra processes")
	}
	commandPath(t)
	vars := map[string]string{"WR_UPSTREAM": upstream, "WR_ROOMS": "sale", "WR_PROTECT": "GET /checkout/*=sale",
		"WR_PASS_KEY": "c21va2UtcGFzcy1rZXktc21va2UtcGFzcy1rZXktMDE="}
	maps.Copy(vars, env)
	return startOn(t, queuetest.Server(t), "", vars)
}

// startOn starts one instance on the Redis and database given (dbURL "":
// none, DATABASE_URL unset).
func startOn(t *testing.T, redisURL, dbURL string, env map[string]string) Server {
	t.Helper()
	vars := map[string]string{
		"WR_JWT_SECRET":       Secret,
		"WR_ADMIN_TOKEN":      AdminToken,
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
	pub, adm := FreeAddr(t), FreeAddr(t)
	vars["WR_HTTP_ADDR"], vars["WR_ADMIN_ADDR"] = pub, adm
	vars["REDIS_URL"] = redisURL
	if dbURL != "" {
		vars["DATABASE_URL"] = dbURL
	}
	room, _, _ := strings.Cut(vars["WR_ROOMS"], ",")
	s := Server{Base: "http://" + pub, Admin: "http://" + adm, Redis: redisURL, DB: dbURL, Room: strings.TrimSpace(room)}
	s.PID = startChild(t, vars, s)
	return s
}

// seedSmoke creates users users (password Password) and one product
// in the database at dbURL.
func seedSmoke(t *testing.T, dbURL string, users int) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	store, err := pgstore.Open(context.Background(), dbURL, pgstore.Options{PoolSize: 2, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	hash, _ := bcrypt.GenerateFromPassword([]byte(Password), bcrypt.MinCost)
	if _, err := store.Seed(context.Background(), pgstore.SeedOptions{Users: users, PasswordHash: hash, Products: 1, Stock: 1_000_000}); err != nil {
		t.Fatal(err)
	}
}

// Args are the common flags that point a scenario at s, then extra.
func (s Server) Args(extra ...string) []string {
	return append([]string{"--base", s.Base, "--admin", s.Admin, "--admin-token", AdminToken, "--timeout", "60s"}, extra...)
}

// RoomState reads the server's room (default unless Room says) through
// its admin API.
func (s Server) RoomState(t *testing.T) (client.RoomState, error) {
	room := s.Room
	if room == "" {
		room = "default"
	}
	return (&client.Admin{Base: s.Admin, Token: AdminToken, Room: room, HTTP: http.DefaultClient}).RoomState(t.Context())
}

// LogOnFailure logs the printed report r when the test has failed.
func LogOnFailure(t *testing.T, r report.Report) {
	t.Cleanup(func() {
		if t.Failed() {
			var b strings.Builder
			r.Print(&b)
			t.Log(b.String())
		}
	})
}

// WriteReports writes rep to --out and --html as main does, and returns
// the HTML page.
func WriteReports(t *testing.T, o *scenario.Options, rep report.Report) string {
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
