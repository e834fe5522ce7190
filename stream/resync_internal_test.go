package stream

import (
	"context"
	"io"
	"iter"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue"
	"waitingroom/queue/queuetest"
)

// recordingSource is the queue as the hub's Source, keeping the snapshots
// of the reads made by resync (the test's own Resync calls), not those of
// any other read (a PositionNow's, say), and telling when the hub's
// subscription is up.
type recordingSource struct {
	*queue.Queue
	mu         sync.Mutex
	reads      []queue.RoomSnapshot
	subscribed chan struct{} // closed at the first Subscribed notice
	once       sync.Once
	lastEv     atomic.Int64 // the number of the last event the hub has applied
}

func (s *recordingSource) Events(ctx context.Context) iter.Seq[queue.Notice] {
	return func(yield func(queue.Notice) bool) {
		for n := range s.Queue.Events(ctx) {
			if !yield(n) {
				return
			}
			if n.Event.Ev > 0 {
				s.lastEv.Store(n.Event.Ev)
			}
			if n.Subscribed {
				s.once.Do(func() { close(s.subscribed) })
			}
		}
	}
}

// ownRead marks the context of the test's own Resync calls.
type ownRead struct{}

func (s *recordingSource) SnapshotsSince(ctx context.Context, rooms []string, held []queue.GoneHeld) ([]queue.RoomSnapshot, error) {
	snaps, err := s.Queue.SnapshotsSince(ctx, rooms, held)
	if ctx.Value(ownRead{}) != nil {
		s.mu.Lock()
		s.reads = append(s.reads, snaps...)
		s.mu.Unlock()
	}
	return snaps, err
}

// resync re-reads the hub's rooms now and returns the snapshots read.
func (f *resyncFixture) resync() []queue.RoomSnapshot {
	f.hub.Resync(context.WithValue(context.Background(), ownRead{}, true))
	f.src.mu.Lock()
	defer f.src.mu.Unlock()
	r := f.src.reads
	f.src.reads = nil
	return r
}

// resyncFixture is a hub on room "r1" (target 0) that applies the room's
// events and re-reads only when the test calls resync: its background
// re-read loop does not run, so no read the test did not make can land
// between two of its steps (a request for one, say from an event that was
// in flight when a snapshot was read, waits in the channel unserved).
type resyncFixture struct {
	t       *testing.T
	rdb     *redis.Client
	q       *queue.Queue
	src     *recordingSource
	hub     *Hub
	tickets map[string]int64 // waiting users' tickets
}

func newResyncFixture(t *testing.T, users int) *resyncFixture {
	rdb, prefix := queuetest.Redis(t)
	q := queue.New(rdb, queue.Options{Prefix: prefix})
	ctx := context.Background()
	if err := q.EnsureRoom(ctx, "r1", queue.RoomConfig{Target: 0, EntryTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	src := &recordingSource{Queue: q, subscribed: make(chan struct{})}
	f := &resyncFixture{t: t, rdb: rdb, q: q, src: src, tickets: map[string]int64{}}
	f.hub = New(Options{Source: f.src, ResyncEvery: time.Hour, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { f.hub.drain(rctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-src.subscribed:
	case <-time.After(10 * time.Second):
		t.Fatal("the hub did not subscribe to the room events")
	}
	for i := range users {
		u := "u" + strconv.Itoa(i)
		st, err := q.Enter(ctx, "r1", u)
		if err != nil {
			t.Fatal(err)
		}
		f.tickets[u] = st.Ticket
	}
	f.hub.roomPtr("r1", true)
	f.hub.Resync(ctx)
	return f
}

// leave makes u leave through the queue: an event every hub applies.
func (f *resyncFixture) leave(u string) {
	if _, err := f.q.Leave(context.Background(), "r1", u); err != nil {
		f.t.Fatal(err)
	}
	delete(f.tickets, u)
}

// departUnseen makes u leave as the leave script does but publishes
// nothing, as when pub/sub drops the event; bumpEv false also keeps the
// room's ev, as a Redis that lost writes and counted ev up again could.
func (f *resyncFixture) departUnseen(u string, bumpEv bool) {
	const script = `local t = redis.call('ZSCORE', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], t, t)
if ARGV[2] == '1' then redis.call('HINCRBY', KEYS[3], 'ev', 1) end
return 1`
	keys := []string{f.q.RoomKey("r1", "queue"), f.q.RoomKey("r1", "gone"), f.q.RoomKey("r1", "stats")}
	bump := "0"
	if bumpEv {
		bump = "1"
	}
	if err := f.rdb.Eval(context.Background(), script, keys, u, bump).Err(); err != nil {
		f.t.Fatal(err)
	}
	delete(f.tickets, u)
}

// awaitEvents waits until the hub has been handed every event Redis
// numbered so far (so none is still on its way, to land after a later
// step) and its state has applied them gap-free, serving the hub's
// requests for a re-read meanwhile as its loop would (a state read at ev 0
// takes its first event for a gap, for one).
func (f *resyncFixture) awaitEvents() {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-f.hub.resync:
			f.hub.Resync(context.Background())
		default:
		}
		evs, err := f.q.EventNumbers(context.Background(), []string{"r1"})
		if err != nil {
			f.t.Fatal(err)
		}
		if st := f.hub.state("r1"); st != nil && !st.stale && st.ev == evs[0] && f.src.lastEv.Load() == evs[0] {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("the hub did not apply the events up to %d: state %+v", evs[0], f.hub.state("r1"))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// wrongPositions returns the waiting users whose position from memory is
// not their 1-based ZRANK.
func (f *resyncFixture) wrongPositions() []string {
	var wrong []string
	for u, t := range f.tickets {
		r, err := f.rdb.ZRank(context.Background(), f.q.RoomKey("r1", "queue"), u).Result()
		if err != nil {
			f.t.Fatal(err)
		}
		if st, ok := f.hub.Position("r1", t); !ok || st.Position != r+1 {
			wrong = append(wrong, u)
		}
	}
	return wrong
}

// TestResyncInSyncLeavesTheGoneListOut: once the hub has applied every
// event, its re-reads leave the departed tickets out (they are the ones
// it holds), and its positions still equal ZRANK.
func TestResyncInSyncLeavesTheGoneListOut(t *testing.T) {
	f := newResyncFixture(t, 12)
	for _, u := range []string{"u2", "u5", "u6", "u10"} {
		f.leave(u)
	}
	f.awaitEvents()
	reads := f.resync()
	if len(reads) == 0 {
		t.Fatal("no snapshot read")
	}
	for _, sn := range reads {
		if !sn.GoneOmitted || sn.Gone != nil || sn.GoneCount != 4 {
			t.Fatalf("snapshot read in sync = %+v; want the 4 departed tickets left out", sn)
		}
	}
	if st := f.hub.state("r1"); st.gone.len() != 4 || time.Since(st.snapshotAt) > time.Minute {
		t.Fatalf("state after the read holds %v, confirmed at %v; want 4 departed, just confirmed", st.gone.all(), st.snapshotAt)
	}
	if w := f.wrongPositions(); len(w) > 0 {
		t.Fatalf("positions from memory differ from ZRANK for %v", w)
	}
}

// TestResyncCorrectsAMissedDeparture: a departure whose event the hub
// never got leaves its list wrong (positions behind it one too far back);
// the next re-read must send the list and put every position right. So
// must one after a departure that did not even move ev, caught by the
// count of departed tickets.
func TestResyncCorrectsAMissedDeparture(t *testing.T) {
	f := newResyncFixture(t, 12)
	f.leave("u3")
	f.awaitEvents()
	for _, bumpEv := range []bool{true, false} {
		u := "u5"
		if !bumpEv {
			u = "u8"
		}
		gone := f.tickets[u]
		f.departUnseen(u, bumpEv)
		if len(f.wrongPositions()) == 0 {
			t.Fatalf("after %s left unseen the hub's positions are already right: the test proves nothing", u)
		}
		full := false
		for _, sn := range f.resync() {
			full = full || !sn.GoneOmitted
		}
		if !full {
			t.Fatalf("ev moved %v: the re-read after %s left unseen did not send the list", bumpEv, u)
		}
		if w := f.wrongPositions(); len(w) > 0 {
			t.Fatalf("ev moved %v: after the re-read positions differ from ZRANK for %v", bumpEv, w)
		}
		if _, ok := f.hub.Position("r1", gone); ok {
			t.Fatalf("%s's ticket still reads as waiting", u)
		}
	}
}

// TestResyncAfterRedisLostTheRoom: Redis loses its data (a restart
// without persistence): the room is created anew, its event numbers start
// over, and new users take the old tickets. The hub, which had seen higher
// event numbers, must take the next read as the truth rather than keep its
// state as newer, so positions equal ZRANK again.
func TestResyncAfterRedisLostTheRoom(t *testing.T) {
	f := newResyncFixture(t, 12)
	for _, u := range []string{"u3", "u5", "u9"} {
		f.leave(u)
	}
	f.awaitEvents()
	ctx := context.Background()
	keys, err := f.rdb.Keys(ctx, f.q.RoomKey("r1", "*")).Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("room keys %v: %v", keys, err)
	}
	if err := f.rdb.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.q.EnsureRoom(ctx, "r1", queue.RoomConfig{Target: 0, EntryTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	f.tickets = map[string]int64{}
	for i := range 10 {
		u := "w" + strconv.Itoa(i)
		st, err := f.q.Enter(ctx, "r1", u)
		if err != nil {
			t.Fatal(err)
		}
		f.tickets[u] = st.Ticket
	}
	if len(f.wrongPositions()) == 0 {
		t.Fatal("the hub's old state already gives the new users' positions: the test proves nothing")
	}
	f.resync()
	if w := f.wrongPositions(); len(w) > 0 {
		t.Fatalf("after the re-read positions differ from ZRANK for %v (state %+v)", w, f.hub.state("r1"))
	}
}
