package stream

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue"
	"waitingroom/queue/queuetest"
)

// recordingSource is the queue as the hub's Source, keeping the snapshots
// of the reads made by resync (the test's own Resync calls), not those of
// the hub's background re-reads, which may be in flight at any time.
type recordingSource struct {
	*queue.Queue
	mu    sync.Mutex
	reads []queue.RoomSnapshot
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

// resyncFixture is a running hub on room "r1" (target 0) that re-reads
// only when asked or when it knows it missed something.
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
	f := &resyncFixture{t: t, rdb: rdb, q: q, src: &recordingSource{Queue: q}, tickets: map[string]int64{}}
	f.hub = New(Options{Source: f.src, ResyncEvery: time.Hour, SweepEvery: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { f.hub.Run(rctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
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

// awaitEvents waits until the hub's state has applied, gap-free, every
// event Redis numbered so far.
func (f *resyncFixture) awaitEvents() {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs, err := f.q.EventNumbers(context.Background(), []string{"r1"})
		if err != nil {
			f.t.Fatal(err)
		}
		if st := f.hub.state("r1"); st != nil && !st.stale && st.ev == evs[0] {
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
