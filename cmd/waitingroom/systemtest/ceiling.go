package systemtest

import (
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"waitingroom/queue/queuetest"
)

// FreePort is a loopback address for a server or proxy a test starts:
// queuetest.FreeAddr's, below the ephemeral ports and free on every
// interface (Caddy binds them all), reserved to this test binary against
// every other while it runs (package freeport) — through a restart on the
// same port too.
func FreePort(t *testing.T) string {
	t.Helper()
	return queuetest.FreeAddr(t)
}

// StartChild runs a server instance as a process of its own (this test
// binary, see TestMain) on e, with an open-file limit of nofile and extra
// environment; exited is closed when the process ends. It is stopped, or
// killed, when the test ends.
func (e *Env) StartChild(nofile string, vars ...string) (in *Instance, exited <-chan struct{}) {
	t := e.T
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no extra processes")
	}
	HoldSlot(t.(*testing.T), "child", ChildSlots)
	pub, adm := FreePort(t.(*testing.T)), FreePort(t.(*testing.T))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		"WR_TEST_CHILD=serve", "WR_TEST_NOFILE="+nofile, "WR_TEST_PREFIX="+e.Prefix,
		"DATABASE_URL="+e.DBURL,
		"WR_HTTP_ADDR="+pub, "WR_ADMIN_ADDR="+adm, "WR_JWT_SECRET="+TestSecret,
		"WR_ADMIN_TOKEN="+TestAdminToken, "WR_DB_POOL=4", "WR_SHUTDOWN_TIMEOUT=5s", "WR_RATE_LIMITS=off",
		// The tests drive a child from one loopback address, beyond what one
		// address may hold at a low ceiling (hostile/connlimits_test.go tests the cap).
		"WR_MAX_CONNS_PER_IP=1000000")
	cmd.Env = append(cmd.Env, e.redisVars()...)
	cmd.Env = append(cmd.Env, vars...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Process.Kill()
		<-done
	})
	in = &Instance{t: t, Base: "http://" + pub, Admin: "http://" + adm, Kill: func() { _ = cmd.Process.Kill() },
		Term: func() error {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			<-done
			return waitErr
		}}
	room := "default"
	for _, v := range vars {
		if r, ok := strings.CutPrefix(v, "WR_ROOMS="); ok {
			room, _, _ = strings.Cut(r, ",")
		}
	}
	WaitFor(t, "the child server and its room", func() bool {
		req, _ := http.NewRequest("GET", in.Admin+"/admin/rooms/"+room, nil)
		req.Header.Set("Authorization", "Bearer "+TestAdminToken)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		return err == nil && res.StatusCode == 200
	})
	return in, done
}
