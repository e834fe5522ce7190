package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"waitingroom/queue/queuetest"
	"waitingroom/server/token"
	"waitingroom/stream/sseclient"
)

// freePort is a loopback address for a server a test starts: the shared
// queuetest.FreeAddr, below the ephemeral ports.
var freePort = queuetest.FreeAddr

// startChild runs a server instance as a process of its own (this test
// binary, see TestMain) on e, with an open-file limit of nofile and extra
// environment; exited is closed when the process ends. It is stopped, or
// killed, when the test ends.
func (e *env) startChild(nofile string, vars ...string) (in *instance, exited <-chan struct{}) {
	t := e.t
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no extra processes")
	}
	pub, adm := freePort(t.(*testing.T)), freePort(t.(*testing.T))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		"WR_TEST_CHILD=serve", "WR_TEST_NOFILE="+nofile, "WR_TEST_PREFIX="+e.prefix,
		"DATABASE_URL="+e.dbURL,
		"WR_HTTP_ADDR="+pub, "WR_ADMIN_ADDR="+adm, "WR_JWT_SECRET="+testSecret,
		"WR_ADMIN_TOKEN="+testAdminToken, "WR_DB_POOL=4", "WR_SHUTDOWN_TIMEOUT=5s", "WR_RATE_LIMITS=off",
		// The tests drive a child from one loopback address, beyond what one
		// address may hold at a low ceiling (connlimits_test.go tests the cap).
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
	in = &instance{t: t, base: "http://" + pub, admin: "http://" + adm, kill: func() { _ = cmd.Process.Kill() },
		term: func() error {
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
	waitFor(t, "the child server and its room", func() bool {
		req, _ := http.NewRequest("GET", in.admin+"/admin/rooms/"+room, nil)
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

	tokens := token.New(token.Config{Secret: testSecret})
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
			s := &sseStream{res: res, r: sseclient.NewReader(bufio.NewReaderSize(res.Body, 4096))}
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
	// Each stream ends: after the updates already on their way (the
	// people waiting grew as the others entered), its next read fails.
	for i, s := range streams {
		ended := false
		for range 1000 {
			if _, err := s.r.Next(); err != nil {
				ended = true
				break
			}
		}
		if !ended {
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

// TestRollingRestart: SIGTERM on one of two instances while it serves
// orders, polls and streams. The instance drains: every request it accepted
// gets its answer (no 5xx), the orders it took are committed, its streams
// are told to reconnect and find their places on the other instance, and
// it exits 0. Clients cut off before being answered retry on the survivor;
// nobody ends with no order or two.
func TestRollingRestart(t *testing.T) {
	e := newEnv(t)
	a := e.start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	b, _ := e.startChild("1024", "WR_TARGET_ACTIVE=0", "WR_ADMIT_INTERVAL=20ms", "WR_DB_POOL=8")

	// 30 buyers admitted, then 10 waiting with streams on b.
	const buyers, waiters = 30, 10
	type buyer struct{ token, entry string }
	bs := make([]buyer, buyers)
	for i := range bs {
		bs[i].token = b.enter(user(i+1), "default").str("queueToken")
	}
	a.setTarget("default", buyers)
	for i := range bs {
		waitFor(t, "buyer admitted", func() bool {
			bs[i].entry = b.position("default", bs[i].token).str("entryToken")
			return bs[i].entry != ""
		})
	}
	streams := make([]*sseStream, waiters)
	wtokens := make([]string, waiters)
	for i := range waiters {
		wtokens[i] = b.enter(user(buyers+i+1), "default").str("queueToken")
		streams[i] = openSSE(t, b, "default", wtokens[i])
		if _, m := streams[i].next(t); m.Position != int64(i+1) {
			t.Fatalf("waiter %d first position %d", i+1, m.Position)
		}
	}

	// Load on b: the buyers order at once, pollers poll, and b gets SIGTERM
	// in the middle of it.
	var served, cut, retried, fivexx atomic.Int64
	orderOn := func(base string, u buyer) (int, error) {
		req, _ := http.NewRequest("POST", base+"/api/v1/orders", strings.NewReader(`{"productId":1,"quantity":1}`))
		req.Header.Set("Authorization", "Bearer "+u.token)
		req.Header.Set("X-Entry-Token", u.entry)
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode, nil
	}
	stopPolls := make(chan struct{})
	var polls sync.WaitGroup
	for i := range waiters {
		polls.Go(func() {
			for {
				select {
				case <-stopPolls:
					return
				default:
				}
				req, _ := http.NewRequest("GET", b.base+"/api/v1/rooms/default/position", nil)
				req.Header.Set("Authorization", "Bearer "+wtokens[i])
				res, err := client.Do(req)
				if err != nil {
					return // b is gone
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode >= 500 {
					fivexx.Add(1)
				}
			}
		})
	}
	var orders sync.WaitGroup
	start := make(chan struct{})
	for i, u := range bs {
		orders.Go(func() {
			<-start
			if i%2 == 1 {
				time.Sleep(time.Duration(i) * time.Millisecond) // spread over the drain
			}
			status, err := orderOn(b.base, u)
			switch {
			case err != nil:
				// Cut before an answer: the order may or may not have
				// been taken. Retrying on the survivor tells: 201, or 403
				// when b did take it (the entry token is spent).
				cut.Add(1)
				status, err = orderOn(a.base, u)
				retried.Add(1)
				if err != nil || (status != 201 && status != 403) {
					t.Errorf("buyer %d retry on the survivor: %d %v", i+1, status, err)
				}
			case status == 201:
				served.Add(1)
			default:
				if status >= 500 {
					fivexx.Add(1)
				}
				t.Errorf("buyer %d order on the draining instance: %d", i+1, status)
			}
		})
	}
	close(start)
	time.Sleep(5 * time.Millisecond)
	termErr := make(chan error, 1)
	go func() { termErr <- b.term() }()
	orders.Wait()
	if err := <-termErr; err != nil {
		t.Fatalf("the drained instance exited with %v", err)
	}
	close(stopPolls)
	polls.Wait()
	if n := fivexx.Load(); n != 0 {
		t.Fatalf("%d answers were 5xx during the drain", n)
	}

	// Exactly one order per buyer, whoever took it.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n, distinct int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT user_id) FROM orders`).Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	if n != buyers || distinct != buyers {
		t.Fatalf("orders: %d by %d users, want %d by %d", n, distinct, buyers, buyers)
	}
	t.Logf("drain: %d orders answered by the draining instance, %d cut and retried on the survivor", served.Load(), cut.Load())

	// The streams were told to reconnect; on the survivor every place is
	// where the queue says.
	for i, s := range streams {
		s.until(t, "reconnect", func(typ string, _ streamMsg) bool { return typ == "reconnect" })
		s = openSSE(t, a, "default", wtokens[i])
		_, m := s.next(t)
		id := strconv.Itoa(buyers + i + 1)
		if rank := zrank(t, e, "default", id); m.Status == "WAITING" && m.Position != rank {
			t.Fatalf("waiter %d on the survivor: pushed %d, ZRANK+1 %d", i+1, m.Position, rank)
		}
	}
}
