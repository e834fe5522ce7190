package main

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
	_, p.port, _ = net.SplitHostPort(freePort(t))
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
	seedDB(t, pg.url())
	base := newEnv(t)
	e := &env{t: t, dbURL: pg.url(), rdb: base.rdb, prefix: base.prefix}
	in := e.start(map[string]string{"WR_ORDER_TIMEOUT": "2s"})
	qt := in.enter(user(1), "default").str("queueToken")
	access := in.login(user(2))
	in.admit("default")
	entry := in.position("default", qt).str("entryToken")
	if entry == "" {
		t.Fatal("not admitted")
	}

	pg.stop("immediate")
	r := in.order(qt, entry, 1, 1)
	if r.status != 503 || r.header.Get("Retry-After") == "" {
		t.Fatalf("order with PostgreSQL stopped = %d %s, want 503 with Retry-After", r.status, r.raw)
	}
	if st := in.position("default", qt); st.str("status") != "READY" || st.str("entryToken") != entry {
		t.Fatalf("after the failed order: %s, want READY with the same entry token", st.raw)
	}
	if r := do(t, "POST", in.base+"/api/v1/auth/login", "", map[string]string{"loginId": user(3), "password": testPassword}); r.status != 503 {
		t.Fatalf("login with PostgreSQL stopped = %d %s", r.status, r.raw)
	}
	if r := do(t, "GET", in.admin+"/readyz", "", nil); r.status != 503 || !strings.Contains(r.raw, "postgres") {
		t.Fatalf("readyz with PostgreSQL stopped = %d %s", r.status, r.raw)
	}
	// The queue does not need the database: entering still works.
	if r := do(t, "POST", in.base+"/api/v1/rooms/default/enter", access, nil); r.status != 200 {
		t.Fatalf("enter with PostgreSQL stopped = %d %s", r.status, r.raw)
	}

	restarted := time.Now()
	pg.start()
	waitFor(t, "readyz after PostgreSQL returns", func() bool {
		return do(t, "GET", in.admin+"/readyz", "", nil).status == 200
	})
	t.Logf("ready %v after pg_ctl start returned", time.Since(restarted).Round(time.Millisecond))
	var o response
	waitFor(t, "the order to go through", func() bool {
		o = in.order(qt, entry, 1, 1)
		if o.status != 201 && o.status != 503 {
			t.Fatalf("order after PostgreSQL returned = %d %s", o.status, o.raw)
		}
		return o.status == 201
	})
}
