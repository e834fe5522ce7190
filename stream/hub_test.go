package stream_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"waitingroom/queue"
	"waitingroom/queue/queuetest"
	"waitingroom/stream"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fixture struct {
	t      *testing.T
	rdb    *redis.Client
	prefix string
	q      *queue.Queue
	hub    *stream.Hub
	drops  atomic.Int64
}

// newFixture starts a hub on a fresh room "r1" (target 0: nobody admitted
// until the test says so).
func newFixture(t *testing.T, o stream.Options) *fixture {
	t.Helper()
	base, prefix := queuetest.Redis(t)
	// The fixture's own client, named, so that a test can tell its hub's
	// connections from those of tests running beside it on the same Redis.
	opt := *base.Options()
	opt.ClientName = "streamtest-" + strconv.FormatUint(rand.Uint64(), 36)
	rdb := redis.NewClient(&opt)
	t.Cleanup(func() { _ = rdb.Close() })
	f := &fixture{t: t, rdb: rdb, prefix: prefix, q: queue.New(rdb, queue.Options{Prefix: prefix})}
	if err := f.q.EnsureRoom(context.Background(), "r1", queue.RoomConfig{Target: 0, EntryTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	o.Source = f.q
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	o.OnDrop = func() { f.drops.Add(1) }
	if o.ResyncEvery == 0 {
		o.ResyncEvery = 200 * time.Millisecond
	}
	if o.SweepEvery == 0 {
		o.SweepEvery = 20 * time.Millisecond
	}
	f.hub = stream.New(o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.hub.Run(ctx); close(done) }()
	t.Cleanup(func() { f.hub.Close(); cancel(); <-done })
	return f
}

func (f *fixture) setTarget(n int64) {
	f.t.Helper()
	if _, err := f.q.UpdateRoom(context.Background(), "r1", queue.RoomUpdate{Target: &n}, false, queue.RoomConfig{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) admit() []string {
	f.t.Helper()
	res, err := f.q.Admit(context.Background(), "r1", 64)
	if err != nil {
		f.t.Fatal(err)
	}
	return res.Admitted
}

// reader keeps the latest update of a subscription, like a stream writer.
type reader struct {
	sub    *stream.Sub
	latest atomic.Pointer[stream.Update]
	count  atomic.Int64
}

func (f *fixture) subscribe(user string) *reader {
	f.t.Helper()
	st, err := f.q.Enter(context.Background(), "r1", user)
	if err != nil {
		f.t.Fatal(err)
	}
	r := &reader{sub: f.hub.Subscribe("r1", user, st)}
	go func() {
		for {
			select {
			case <-r.sub.Notify():
			case <-r.sub.Done():
				if u, ok := r.sub.Take(); ok {
					r.latest.Store(&u)
				}
				return
			}
			if u, ok := r.sub.Take(); ok {
				r.latest.Store(&u)
				r.count.Add(1)
			}
		}
	}()
	f.t.Cleanup(r.sub.Close)
	return r
}

// waitFor is the shared helper (queuetest.WaitFor).
var waitFor = queuetest.WaitFor

// zrank is the truth: the 1-based rank of user, or 0 when not waiting.
func (f *fixture) zrank(user string) int64 {
	r, err := f.rdb.ZRank(context.Background(), f.prefix+"{r1}:queue", user).Result()
	if err == redis.Nil {
		return 0
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return r + 1
}

func everyChange(int64) time.Duration { return 0 }

// TestPushedPositionsEqualZRank: users enter, some leave, admissions run;
// once each step settles, every pushed position equals the 1-based ZRANK,
// admitted users got READY and departed users got gone.
func TestPushedPositionsEqualZRank(t *testing.T) {
	f := newFixture(t, stream.Options{Coalesce: everyChange})
	const n = 150
	readers := map[string]*reader{}
	for i := range n {
		u := "u" + strconv.Itoa(i)
		readers[u] = f.subscribe(u)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	left := map[string]bool{}
	admitted := map[string]bool{}
	for step := range 12 {
		// a few waiting users leave
		for range 3 {
			u := "u" + strconv.Itoa(rng.IntN(n))
			if left[u] || admitted[u] {
				continue
			}
			if _, err := f.q.Leave(context.Background(), "r1", u); err != nil {
				t.Fatal(err)
			}
			left[u] = true
		}
		// then one admission tick of 7 more users
		f.setTarget(int64(7 * (step + 1)))
		for _, u := range f.admit() {
			admitted[u] = true
		}
		settle := func() bool {
			for u, r := range readers {
				l := r.latest.Load()
				if l == nil {
					return false
				}
				switch {
				case admitted[u]:
					if l.Status.State != queue.Ready || l.Status.EntryToken == "" {
						return false
					}
				case left[u]:
					if !l.Gone {
						return false
					}
				default:
					if l.Status.State != queue.Waiting || l.Status.Position != f.zrank(u) {
						return false
					}
				}
			}
			return true
		}
		waitFor(t, fmt.Sprintf("step %d to settle with positions = ZRANK", step), settle)
	}
	if len(admitted) != 84 {
		t.Fatalf("admitted %d, want 84", len(admitted))
	}
}

func TestPositionAnswersFromMemory(t *testing.T) {
	f := newFixture(t, stream.Options{})
	var tickets []int64
	for i := range 5 {
		st, _ := f.q.Enter(context.Background(), "r1", "u"+strconv.Itoa(i))
		tickets = append(tickets, st.Ticket)
	}
	f.hub.Position("r1", tickets[0]) // starts tracking the room
	waitFor(t, "a fresh room state", func() bool { _, ok := f.hub.Position("r1", tickets[4]); return ok })
	f.q.Leave(context.Background(), "r1", "u1")
	f.setTarget(1)
	f.admit() // u0
	waitFor(t, "u4 at position 3", func() bool {
		st, ok := f.hub.Position("r1", tickets[4])
		return ok && st.Position == 3 && st.Waiting == 3
	})
	for i, want := range map[int]bool{0: false, 1: false, 2: true} {
		if _, ok := f.hub.Position("r1", tickets[i]); ok != want {
			t.Errorf("Position(u%d) ok = %v, want %v (admitted and departed users go to Redis)", i, ok, want)
		}
	}
}

func TestStalledConnectionIsDroppedOthersUnaffected(t *testing.T) {
	f := newFixture(t, stream.Options{Coalesce: everyChange, StallTimeout: 100 * time.Millisecond})
	st, _ := f.q.Enter(context.Background(), "r1", "stuck")
	stuck := f.hub.Subscribe("r1", "stuck", st) // never read
	t.Cleanup(stuck.Close)
	var others []*reader
	for i := range 20 {
		others = append(others, f.subscribe("u"+strconv.Itoa(i)))
	}
	f.setTarget(10)
	f.admit()
	waitFor(t, "the others to be told", func() bool {
		for _, r := range others[10:] {
			if l := r.latest.Load(); l == nil || l.Status.Position != f.zrank(r.sub.User) {
				return false
			}
		}
		return true
	})
	waitFor(t, "the stalled connection to be dropped", func() bool {
		select {
		case <-stuck.Done():
			return true
		default:
			return false
		}
	})
	if f.drops.Load() != 1 {
		t.Fatalf("drops = %d, want 1", f.drops.Load())
	}
	if got := f.hub.Connections(); got != 20 {
		t.Fatalf("connections = %d, want 20", got)
	}
}

func TestBandCoalescing(t *testing.T) {
	f := newFixture(t, stream.Options{Coalesce: func(pos int64) time.Duration {
		if pos <= 5 {
			return 0
		}
		return time.Hour // the far band: no second push within the test
	}})
	var rs []*reader
	for i := range 12 {
		rs = append(rs, f.subscribe("u"+strconv.Itoa(i)))
	}
	waitFor(t, "initial statuses", func() bool {
		for _, r := range rs {
			if r.count.Load() == 0 {
				return false
			}
		}
		return true
	})
	f.setTarget(3)
	f.admit()
	near, far := rs[6], rs[11] // positions 4 and 9 after the admission
	waitFor(t, "the near band to be told", func() bool {
		l := near.latest.Load()
		return l != nil && l.Status.Position == 4
	})
	if l := far.latest.Load(); l.Status.Position != 12 || far.count.Load() != 1 {
		t.Fatalf("far band: %d pushes, last position %d; want only the initial 12", far.count.Load(), l.Status.Position)
	}
}

// TestResubscribeConverges kills the hub's pub/sub connection; events
// published while it is down are lost, and the hub still converges.
func TestResubscribeConverges(t *testing.T) {
	f := newFixture(t, stream.Options{Coalesce: everyChange, ResyncEvery: time.Hour})
	var rs []*reader
	for i := range 10 {
		rs = append(rs, f.subscribe("u"+strconv.Itoa(i)))
	}
	waitFor(t, "the hub's subscription", func() bool { return len(pubsubConns(t, f.rdb)) > 0 })
	killPubSub(t, f.rdb)
	f.setTarget(4)
	f.admit()
	waitFor(t, "convergence after resubscribing", func() bool {
		for i, r := range rs {
			l := r.latest.Load()
			if l == nil {
				return false
			}
			if i < 4 && l.Status.State != queue.Ready {
				return false
			}
			if i >= 4 && l.Status.Position != int64(i-3) {
				return false
			}
		}
		return true
	})
}

// pubsubConns are the ids of rdb's connections (by its client name) that
// hold a subscription: the fixture's hub's, never another test's.
func pubsubConns(t *testing.T, rdb *redis.Client) []string {
	list, err := rdb.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, line := range strings.Split(list, "\n") {
		f := strings.Fields(line)
		if !slices.Contains(f, "name="+rdb.Options().ClientName) || (slices.Contains(f, "psub=0") && slices.Contains(f, "sub=0")) {
			continue
		}
		for _, kv := range f {
			if id, ok := strings.CutPrefix(kv, "id="); ok {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// killPubSub kills the hub's subscribed connections.
func killPubSub(t *testing.T, rdb *redis.Client) {
	killed := 0
	for _, id := range pubsubConns(t, rdb) {
		if err := rdb.Do(context.Background(), "CLIENT", "KILL", "ID", id).Err(); err == nil {
			killed++
		}
	}
	if killed == 0 {
		t.Fatal("no pub/sub connection to kill")
	}
}
