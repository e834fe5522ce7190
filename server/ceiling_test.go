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

// TestConnectionCeiling runs a real server process whose open-file limit
// is 300 and opens more streams than it may hold: the excess get 503, the
// process keeps running, and the streams it accepted keep receiving.
func TestConnectionCeiling(t *testing.T) {
	e := newEnv(t)
	pub, adm := freePort(t), freePort(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		"WR_TEST_CHILD=serve", "WR_TEST_NOFILE=300", "WR_TEST_PREFIX="+e.prefix,
		"REDIS_URL=redis://"+e.rdb.Options().Addr+"/"+strconv.Itoa(e.rdb.Options().DB), "DATABASE_URL="+e.dbURL,
		"WR_HTTP_ADDR="+pub, "WR_ADMIN_ADDR="+adm, "WR_JWT_SECRET="+testSecret,
		"WR_ADMIN_TOKEN="+testAdminToken, "WR_TARGET_ACTIVE=0", "WR_DB_POOL=4", "WR_ADMIT_INTERVAL=20ms",
		"WR_SHUTDOWN_TIMEOUT=5s", "WR_RATE_LIMITS=off")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Process.Kill()
		<-exited
	})
	in := &instance{t: t, base: "http://" + pub, admin: "http://" + adm}
	waitFor(t, "the child server and its room", func() bool {
		req, _ := http.NewRequest("GET", in.admin+"/admin/rooms/default", nil)
		req.Header.Set("Authorization", "Bearer "+testAdminToken)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		return err == nil && res.StatusCode == 200
	})

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
	case err := <-exited:
		t.Fatalf("the server exited with %d streams open: %v", len(open), err)
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
