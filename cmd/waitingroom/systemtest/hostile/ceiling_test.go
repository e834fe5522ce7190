package hostile

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/token"
	"waitingroom/stream/sseclient"
)

// TestConnectionCeiling runs a real server process whose open-file limit
// is 300 and opens more streams than it may hold: the excess get 503, the
// process keeps running, and the streams it accepted keep receiving.
func TestConnectionCeiling(t *testing.T) {
	e := systemtest.NewEnv(t)
	in, exited := e.StartChild("300", "WR_TARGET_ACTIVE=0", "WR_ADMIT_INTERVAL=20ms")

	tokens := token.New(token.Config{Secret: systemtest.TestSecret})
	const tries = 260
	var open []*systemtest.SSEStream
	refused := 0
	for i := range tries {
		access, _ := tokens.IssueAccess(strconv.Itoa(i+1000), time.Hour)
		r := systemtest.Do(t, "POST", in.Base+"/api/v1/rooms/default/enter", access, nil)
		if r.Status == 503 {
			refused++
			continue
		}
		if r.Status != 200 {
			t.Fatalf("enter = %d %s", r.Status, r.Raw)
		}
		req, _ := http.NewRequest("GET", in.Base+"/api/v1/rooms/default/events", nil)
		req.Header.Set("Authorization", "Bearer "+r.Str("queueToken"))
		res, err := systemtest.StreamClient.Do(req)
		switch {
		case err != nil:
			refused++ // closed by the server at accept
		case res.StatusCode == 503:
			res.Body.Close()
			refused++
		case res.StatusCode == 200:
			s := &systemtest.SSEStream{Res: res, R: sseclient.NewReader(bufio.NewReaderSize(res.Body, 4096))}
			t.Cleanup(func() { res.Body.Close() })
			if _, m := s.Next(t); m.Status != "WAITING" {
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
	systemtest.StreamClient.CloseIdleConnections()
	systemtest.Client.CloseIdleConnections()
	in.SetTarget("default", 1)
	open[0].Until(t, "READY", systemtest.IsReady)
	t.Logf("limit 300 descriptors: %d streams served, %d refused with 503", len(open), refused)
}

// TestInstanceKilledMidQueue: an instance holding streams is killed with
// SIGKILL; nobody loses their place, the streams reconnect to the other
// instance with the same tokens and follow the queue from there.
func TestInstanceKilledMidQueue(t *testing.T) {
	e := systemtest.NewEnv(t)
	a := e.Start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	b, exited := e.StartChild("1024", "WR_TARGET_ACTIVE=0", "WR_ADMIT_INTERVAL=20ms")
	const users = 10
	tokens := make([]string, users)
	var streams []*systemtest.SSEStream
	for i := range users {
		tokens[i] = b.Enter(systemtest.User(i+1), "default").Str("queueToken")
		s := systemtest.OpenSSE(t, b, "default", tokens[i])
		if _, m := s.Next(t); m.Position != int64(i+1) {
			t.Fatalf("user%d first position %d", i+1, m.Position)
		}
		streams = append(streams, s)
	}
	b.Kill()
	<-exited
	// Each stream ends: after the updates already on their way (the
	// people waiting grew as the others entered), its next read fails.
	for i, s := range streams {
		ended := false
		for range 1000 {
			if _, err := s.R.Next(); err != nil {
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
		streams[i] = systemtest.OpenSSE(t, a, "default", tokens[i])
		if _, m := streams[i].Next(t); m.Position != int64(i+1) || m.Status != "WAITING" {
			t.Fatalf("user%d after the kill: %+v, want WAITING at %d", i+1, m, i+1)
		}
	}
	a.SetTarget("default", 3)
	for i := range users {
		if i < 3 {
			streams[i].Until(t, "READY", systemtest.IsReady)
			continue
		}
		want := int64(i - 2)
		streams[i].Until(t, "the next position", func(_ string, m systemtest.StreamMsg) bool { return m.Position == want })
	}
}

// TestRollingRestart: SIGTERM on one of two instances while it serves
// orders, polls and streams. The instance drains: every request it accepted
// gets its answer (no 5xx), the orders it took are committed, its streams
// are told to reconnect and find their places on the other instance, and
// it exits 0. Clients cut off before being answered retry on the survivor;
// nobody ends with no order or two.
func TestRollingRestart(t *testing.T) {
	e := systemtest.NewEnv(t)
	a := e.Start(map[string]string{"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "0"})
	b, _ := e.StartChild("1024", "WR_TARGET_ACTIVE=0", "WR_ADMIT_INTERVAL=20ms", "WR_DB_POOL=8")

	// 30 buyers admitted, then 10 waiting with streams on b.
	const buyers, waiters = 30, 10
	type buyer struct{ token, entry string }
	bs := make([]buyer, buyers)
	for i := range bs {
		bs[i].token = b.Enter(systemtest.User(i+1), "default").Str("queueToken")
	}
	a.SetTarget("default", buyers)
	for i := range bs {
		systemtest.WaitFor(t, "buyer admitted", func() bool {
			bs[i].entry = b.Position("default", bs[i].token).Str("entryToken")
			return bs[i].entry != ""
		})
	}
	streams := make([]*systemtest.SSEStream, waiters)
	wtokens := make([]string, waiters)
	for i := range waiters {
		wtokens[i] = b.Enter(systemtest.User(buyers+i+1), "default").Str("queueToken")
		streams[i] = systemtest.OpenSSE(t, b, "default", wtokens[i])
		if _, m := streams[i].Next(t); m.Position != int64(i+1) {
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
		res, err := systemtest.Client.Do(req)
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
				req, _ := http.NewRequest("GET", b.Base+"/api/v1/rooms/default/position", nil)
				req.Header.Set("Authorization", "Bearer "+wtokens[i])
				res, err := systemtest.Client.Do(req)
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
			status, err := orderOn(b.Base, u)
			switch {
			case err != nil:
				// Cut before an answer: the order may or may not have
				// been taken. Retrying on the survivor tells: 201, or 403
				// when b did take it (the entry token is spent).
				cut.Add(1)
				status, err = orderOn(a.Base, u)
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
	go func() { termErr <- b.Term() }()
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
	conn, err := pgx.Connect(ctx, e.DBURL)
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
		s.Until(t, "reconnect", func(typ string, _ systemtest.StreamMsg) bool { return typ == "reconnect" })
		s = systemtest.OpenSSE(t, a, "default", wtokens[i])
		_, m := s.Next(t)
		id := strconv.Itoa(buyers + i + 1)
		if rank := systemtest.Zrank(t, e, "default", id); m.Status == "WAITING" && m.Position != rank {
			t.Fatalf("waiter %d on the survivor: pushed %d, ZRANK+1 %d", i+1, m.Position, rank)
		}
	}
}
