package resilience

import (
	"net"
	"os"
	"os/exec"
	osuser "os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"waitingroom/cmd/waitingroom/systemtest"
)

// pgProc is a PostgreSQL server of the test's own: initdb in a temporary
// directory, a spare port, trust authentication. As root it runs as the
// postgres system user, since PostgreSQL refuses to run as root.
type pgProc struct {
	t         *testing.T
	bin, data string
	port      string
	asUser    []string // runuser prefix when root
}

func pgBinDir(t *testing.T) string {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := os.Stat(filepath.Join(filepath.Dir(p), "postgres")); err == nil {
			return filepath.Dir(p)
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "pg_ctl")); err == nil {
			return dirs[i]
		}
	}
	t.Fatal("PostgreSQL server binaries (initdb, pg_ctl) not found: install postgresql, or run make test")
	return ""
}

func startPostgres(t *testing.T) *pgProc {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no extra processes")
	}
	p := &pgProc{t: t, bin: pgBinDir(t)}
	_, p.port, _ = net.SplitHostPort(systemtest.FreePort(t))
	dir, err := os.MkdirTemp("", "wr-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		u, err := osuser.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs the postgres system user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		p.asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	p.data = filepath.Join(dir, "data")
	p.run("initdb", "-D", p.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync")
	p.start()
	t.Cleanup(func() { p.stop("immediate") })
	return p
}

// run runs one of the server binaries, failing the test on error.
func (p *pgProc) run(name string, args ...string) {
	p.t.Helper()
	argv := append(append(append([]string{}, p.asUser...), filepath.Join(p.bin, name)), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = "/"
	if out, err := cmd.CombinedOutput(); err != nil {
		p.t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
}

func (p *pgProc) start() {
	p.t.Helper()
	p.run("pg_ctl", "-D", p.data, "-w", "-l", filepath.Join(filepath.Dir(p.data), "log"), "start",
		"-o", "-p "+p.port+" -c listen_addresses=127.0.0.1 -k "+filepath.Dir(p.data)+" -c fsync=off")
}

// stop stops the server; mode "immediate" is a crash (no checkpoint).
func (p *pgProc) stop(mode string) {
	argv := append(append(append([]string{}, p.asUser...), filepath.Join(p.bin, "pg_ctl")), "-D", p.data, "-w", "-m", mode, "stop")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = "/"
	_ = cmd.Run() // already stopped is fine
}

func (p *pgProc) url() string {
	return "postgres://postgres@127.0.0.1:" + p.port + "/postgres?sslmode=disable"
}

// TestPostgresStopsAndReturns: the test's own PostgreSQL is stopped
// (immediate mode, as a crash) while a user holds an entry token. Orders
// answer 503 with Retry-After and give the token back, logins 503,
// /readyz names the database; when PostgreSQL is started again the pool
// recovers by itself and the same order succeeds — no restart of the
// waiting room.
func TestPostgresStopsAndReturns(t *testing.T) {
	pg := startPostgres(t)
	systemtest.SeedDB(t, pg.url())
	base := systemtest.NewEnv(t)
	e := &systemtest.Env{T: t, DBURL: pg.url(), Redis: base.Redis, Prefix: base.Prefix}
	in := e.Start(map[string]string{"WR_ORDER_TIMEOUT": "2s"})
	qt := in.Enter(systemtest.User(1), "default").Str("queueToken")
	access := in.Login(systemtest.User(2))
	in.Admit("default")
	entry := in.Position("default", qt).Str("entryToken")
	if entry == "" {
		t.Fatal("not admitted")
	}

	pg.stop("immediate")
	r := in.Order(qt, entry, 1, 1)
	if r.Status != 503 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("order with PostgreSQL stopped = %d %s, want 503 with Retry-After", r.Status, r.Raw)
	}
	if st := in.Position("default", qt); st.Str("status") != "READY" || st.Str("entryToken") != entry {
		t.Fatalf("after the failed order: %s, want READY with the same entry token", st.Raw)
	}
	if r := systemtest.Do(t, "POST", in.Base+"/api/v1/auth/login", "", map[string]string{"loginId": systemtest.User(3), "password": systemtest.TestPassword}); r.Status != 503 {
		t.Fatalf("login with PostgreSQL stopped = %d %s", r.Status, r.Raw)
	}
	if r := systemtest.Do(t, "GET", in.Admin+"/readyz", "", nil); r.Status != 503 || !strings.Contains(r.Raw, "postgres") {
		t.Fatalf("readyz with PostgreSQL stopped = %d %s", r.Status, r.Raw)
	}
	// The queue does not need the database: entering still works.
	if r := systemtest.Do(t, "POST", in.Base+"/api/v1/rooms/default/enter", access, nil); r.Status != 200 {
		t.Fatalf("enter with PostgreSQL stopped = %d %s", r.Status, r.Raw)
	}

	restarted := time.Now()
	pg.start()
	systemtest.WaitFor(t, "readyz after PostgreSQL returns", func() bool {
		return systemtest.Do(t, "GET", in.Admin+"/readyz", "", nil).Status == 200
	})
	t.Logf("ready %v after pg_ctl start returned", time.Since(restarted).Round(time.Millisecond))
	var o systemtest.Response
	systemtest.WaitFor(t, "the order to go through", func() bool {
		o = in.Order(qt, entry, 1, 1)
		if o.Status != 201 && o.Status != 503 {
			t.Fatalf("order after PostgreSQL returned = %d %s", o.Status, o.Raw)
		}
		return o.Status == 201
	})
}
