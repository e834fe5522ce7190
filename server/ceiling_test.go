package server_test

import (
	"bufio"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"waitingroom/server"
	"waitingroom/stream/sse"
)

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startChild runs a server instance as a process of its own (this test
// binary, see TestMain) on e, with an open-file limit of nofile and extra
// environment; exited is closed when the process ends. It is stopped, or
// killed, when the test ends.
func (e *env) startChild(nofile string, vars ...string) (in *instance, exited <-chan struct{}) {
	t := e.t
	t.Helper()
	pub, adm := freePort(t.(*testing.T)), freePort(t.(*testing.T))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		"WR_TEST_CHILD=serve", "WR_TEST_NOFILE="+nofile, "WR_TEST_PREFIX="+e.prefix,
		"DATABASE_URL="+e.dbURL,
		"WR_HTTP_ADDR="+pub, "WR_ADMIN_ADDR="+adm, "WR_JWT_SECRET="+testSecret,
		"WR_ADMIN_TOKEN="+testAdminToken, "WR_DB_POOL=4", "WR_SHUTDOWN_TIMEOUT=5s", "WR_RATE_LIMITS=off")
	cmd.Env = append(cmd.Env, e.redisVars()...)
	cmd.Env = append(cmd.Env, vars...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Process.Kill()
		<-done
	})
	in = &instance{t: t, base: "http://" + pub, admin: "http://" + adm, kill: func() { _ = cmd.Process.Kill() }}
	waitFor(t, "the child server", func() bool {
		req, _ := http.NewRequest("GET", in.admin+"/admin/rooms", nil)
		req.Header.Set("Authorization", "Bearer "+testAdminToken)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		return err == nil && res.StatusCode == 200
	})
	return in, done
}

// TestConnectionCeiling runs a real server process whose open-file limit
// is 300 and opens more streams than it may hold: the excess get 503, the
// process keeps running, and the streams it accepted keep receiving.
func TestConnectionCeiling(t *testing.T) {
	e := newEnv(t)
	in, exited := e.startChild("300", "WR_TARGET_ACTIVE=0", "WR_ADMIT_INTERVAL=20ms")

	tokens := server.NewTokens(testSecret, "")
	const tries = 260
	var open []*sseStream
	refused := 0
	for i := range tries {
		access, _ := tokens.IssueAccess(strconv.Itoa(i+1000), time.Hour)
		r := do(t, "POST", in.base+"/api/v1/rooms/default/enter", access, nil)
		if r.status == 503 {
			refused++
			continue
		}
		if r.status != 200 {
			t.Fatalf("enter = %d %s", r.status, r.raw)
		}
		req, _ := http.NewRequest("GET", in.base+"/api/v1/rooms/default/events", nil)
		req.Header.Set("Authorization", "Bearer "+r.str("queueToken"))
		res, err := streamClient.Do(req)
		switch {
		case err != nil:
			refused++ // closed by the server at accept
		case res.StatusCode == 503:
			res.Body.Close()
			refused++
		case res.StatusCode == 200:
			s := &sseStream{res: res, r: sse.NewReader(bufio.NewReaderSize(res.Body, 4096))}
			t.Cleanup(func() { res.Body.Close() })
			if _, m := s.next(t); m.Status != "WAITING" {
				t.Fatalf("first event %+v", m)
			}
			open = append(open, s)
		default:
			t.Fatalf("events = %d", res.StatusCode)
		}
	}
	select {
	case <-exited:
		t.Fatalf("the server exited with %d streams open", len(open))
	default:
	}
	if refused == 0 || len(open) < 100 {
		t.Fatalf("%d streams open, %d refused: want the excess refused and the rest served", len(open), refused)
	}
	// The accepted streams still work: admit the first one and it hears READY.
	streamClient.CloseIdleConnections()
	client.CloseIdleConnections()
	in.setTarget("default", 1)
	open[0].until(t, "READY", isReady)
	t.Logf("limit 300 descriptors: %d streams served, %d refused with 503", len(open), refused)
}

// TestInstanceKilledMidQueue: an instance holding streams is killed with
// SIGKILL; nobody loses their place, the streams reconnect to the other
// instance with the same tokens and follow the queue from there.
func TestInstanceKilledMidQueue(t *testing.T) {
	e := newEnv(t)
	a := e.start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	b, exited := e.startChild("1024", "WR_TARGET_ACTIVE=0", "WR_ADMIT_INTERVAL=20ms")
	const users = 10
	tokens := make([]string, users)
	var streams []*sseStream
	for i := range users {
		tokens[i] = b.enter(user(i+1), "default").str("queueToken")
		s := openSSE(t, b, "default", tokens[i])
		if _, m := s.next(t); m.Position != int64(i+1) {
			t.Fatalf("user%d first position %d", i+1, m.Position)
		}
		streams = append(streams, s)
	}
	b.kill()
	<-exited
	for i, s := range streams {
		if _, err := s.r.Next(); err == nil {
			t.Fatalf("stream %d still open after SIGKILL", i)
		}
	}
	// Reconnect to the survivor: every place is intact.
	for i := range users {
		streams[i] = openSSE(t, a, "default", tokens[i])
		if _, m := streams[i].next(t); m.Position != int64(i+1) || m.Status != "WAITING" {
			t.Fatalf("user%d after the kill: %+v, want WAITING at %d", i+1, m, i+1)
		}
	}
	a.setTarget("default", 3)
	for i := range users {
		if i < 3 {
			streams[i].until(t, "READY", isReady)
			continue
		}
		want := int64(i - 2)
		streams[i].until(t, "the next position", func(_ string, m streamMsg) bool { return m.Position == want })
	}
}
