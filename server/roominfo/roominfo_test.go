package roominfo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue"
	"waitingroom/queue/queuetest"
)

// countHook counts the round trips a client makes and the commands it
// sends by name, leaving out those that set up a new connection; while
// down is set, every command fails as with Redis unreachable.
type countHook struct {
	trips atomic.Int64
	down  atomic.Bool
	mu    sync.Mutex
	cmds  map[string]int
}

func (h *countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if setup[strings.ToLower(cmd.Name())] {
			return next(ctx, cmd)
		}
		h.trips.Add(1)
		if err := h.count(cmd); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (h *countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.trips.Add(1)
		for _, c := range cmds {
			if err := h.count(c); err != nil {
				return err
			}
		}
		return next(ctx, cmds)
	}
}

// setup are the commands a new connection starts with.
var setup = map[string]bool{"hello": true, "client": true, "auth": true, "select": true, "ping": true}

func (h *countHook) count(cmd redis.Cmder) error {
	h.mu.Lock()
	h.cmds[strings.ToLower(cmd.Name())]++
	h.mu.Unlock()
	if h.down.Load() {
		return errors.New("connection refused")
	}
	return nil
}

// sent is the commands sent since the last call, by name.
func (h *countHook) sent() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.cmds
	h.cmds = map[string]int{}
	return out
}

// clock is a clock the test moves.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// mustRooms makes the rooms named under a prefix of the test's, with a
// counting hook on the client (installed after the rooms are made), and a
// directory of them on a clock of the test's.
func mustRooms(t *testing.T, names ...string) (*redis.Client, string, *countHook, *directory, *clock) {
	t.Helper()
	rdb, prefix := queuetest.Redis(t)
	q := queue.New(rdb, queue.Options{Prefix: prefix})
	for _, n := range names {
		name := "The " + n
		if _, err := q.UpdateRoom(context.Background(), n, queue.RoomUpdate{DisplayName: &name}, true, queue.RoomConfig{Target: 1}); err != nil {
			t.Fatal(err)
		}
	}
	hook := &countHook{cmds: map[string]int{}}
	rdb.AddHook(hook)
	c := &clock{}
	c.ns.Store(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixNano())
	return rdb, prefix, hook, newDirectory(q, c.now), c
}

// TestRoomDirectoryServesFromMemory: a crowd asking for rooms, known and
// made up, costs one read of the room set and one of the room asked for
// per second, not one per request; a change shows once the second is up.
func TestRoomDirectoryServesFromMemory(t *testing.T) {
	rdb, prefix, hook, dir, clk := mustRooms(t, "sale")
	q := queue.New(rdb, queue.Options{Prefix: prefix})
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 400 {
		wg.Go(func() {
			if _, err := dir.get(ctx, "made-up-"+string(rune('a'+i%26))); !errors.Is(err, queue.ErrRoomNotFound) {
				t.Errorf("a made-up room: %v, want ErrRoomNotFound", err)
			}
			d, err := dir.get(ctx, "sale")
			if err != nil || d.DisplayName != "The sale" || d.Method != "fifo" || d.Room != "sale" {
				t.Errorf("sale = %+v, %v", d, err)
			}
		})
	}
	wg.Wait()
	if n := hook.trips.Load(); n != 2 {
		t.Fatalf("800 requests cost %d Redis round trips, want 2 (the room set, the room)", n)
	}
	paused := true
	if _, err := q.UpdateRoom(ctx, "sale", queue.RoomUpdate{Paused: &paused}, false, queue.RoomConfig{}); err != nil {
		t.Fatal(err)
	}
	hook.sent()
	if d, err := dir.get(ctx, "sale"); err != nil || d.Paused {
		t.Fatalf("within the second: %+v, %v (want the last read)", d, err)
	}
	clk.advance(roomInfoFresh)
	before := hook.trips.Load()
	if d, err := dir.get(ctx, "sale"); err != nil || !d.Paused {
		t.Fatalf("after a second: %+v, %v", d, err)
	}
	if n := hook.trips.Load() - before; n != 2 {
		t.Fatalf("the refresh cost %d round trips, want 2", n)
	}
}

// TestRoomDirectoryCostFollowsTheRoomsAsked: with many rooms, asking for
// one reads that one alone, at most once a second however often it is
// asked for; a made-up name reads nothing but the room set, once a second.
func TestRoomDirectoryCostFollowsTheRoomsAsked(t *testing.T) {
	names := make([]string, 50)
	for i := range names {
		names[i] = fmt.Sprintf("room-%02d", i)
	}
	_, _, hook, dir, clk := mustRooms(t, names...)
	ctx := context.Background()
	for range 100 {
		if d, err := dir.get(ctx, "room-07"); err != nil || d.DisplayName != "The room-07" {
			t.Fatalf("room-07 = %+v, %v", d, err)
		}
	}
	if got := hook.sent(); got["smembers"] != 1 || got["hgetall"] != 1 || len(got) != 2 {
		t.Fatalf("100 requests for one of 50 rooms sent %v, want one smembers and one hgetall", got)
	}
	for i := range 100 {
		if _, err := dir.get(ctx, fmt.Sprintf("nope-%d", i)); !errors.Is(err, queue.ErrRoomNotFound) {
			t.Fatalf("nope-%d: %v, want ErrRoomNotFound", i, err)
		}
	}
	if got := hook.sent(); len(got) != 0 {
		t.Fatalf("100 made-up names within the second sent %v, want nothing", got)
	}
	clk.advance(roomInfoFresh)
	for i := range 100 {
		if _, err := dir.get(ctx, fmt.Sprintf("nope-%d", i)); !errors.Is(err, queue.ErrRoomNotFound) {
			t.Fatalf("nope-%d: %v", i, err)
		}
	}
	if got := hook.sent(); got["smembers"] != 1 || len(got) != 1 {
		t.Fatalf("100 made-up names the next second sent %v, want one smembers", got)
	}
	for _, r := range []string{"room-07", "room-08", "room-08"} {
		if _, err := dir.get(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if got := hook.sent(); got["hgetall"] != 2 || len(got) != 1 {
		t.Fatalf("room-07 again and room-08 twice sent %v, want two hgetall", got)
	}
	if n := len(dir.docs); n != 2 {
		t.Fatalf("%d documents kept, want 2 (the rooms asked for)", n)
	}
}

// TestRoomDirectorySharesARead: callers asking at once for a room never
// read share one read.
func TestRoomDirectorySharesARead(t *testing.T) {
	_, _, hook, dir, _ := mustRooms(t, "sale", "other")
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			if d, err := dir.get(ctx, "other"); err != nil || d.Room != "other" {
				t.Errorf("other = %+v, %v", d, err)
			}
		})
	}
	wg.Wait()
	if got := hook.sent(); got["smembers"] != 1 || got["hgetall"] != 1 {
		t.Fatalf("200 callers at once sent %v, want one smembers and one hgetall", got)
	}
}

// TestRoomDirectoryKeepsTheLastWhileRedisFails: with Redis unreachable
// a room read before is answered as it was, a room never read is 503
// (ErrUnavailable), and both are tried again a second later, not per
// request; a room deleted is 404 once the set is read again.
func TestRoomDirectoryKeepsTheLastWhileRedisFails(t *testing.T) {
	rdb, prefix, hook, dir, clk := mustRooms(t, "sale", "other")
	ctx := context.Background()
	if _, err := dir.get(ctx, "sale"); err != nil {
		t.Fatal(err)
	}
	hook.down.Store(true)
	clk.advance(roomInfoFresh)
	hook.sent()
	for range 10 {
		if d, err := dir.get(ctx, "sale"); err != nil || d.DisplayName != "The sale" {
			t.Fatalf("sale while Redis fails = %+v, %v, want the last read", d, err)
		}
		if _, err := dir.get(ctx, "other"); !errors.Is(err, queue.ErrUnavailable) {
			t.Fatalf("other, never read, while Redis fails: %v, want ErrUnavailable", err)
		}
	}
	if got := hook.sent(); got["smembers"] != 1 || got["hgetall"] != 2 {
		t.Fatalf("20 requests while Redis fails sent %v, want one smembers, one hgetall per room", got)
	}
	hook.down.Store(false)
	// A room deleted leaves the room set (the queue's "<prefix>rooms").
	if err := rdb.SRem(ctx, prefix+"rooms", "sale").Err(); err != nil {
		t.Fatal(err)
	}
	clk.advance(roomInfoFresh)
	if _, err := dir.get(ctx, "sale"); !errors.Is(err, queue.ErrRoomNotFound) {
		t.Fatalf("sale deleted: %v, want ErrRoomNotFound", err)
	}
	if d, err := dir.get(ctx, "other"); err != nil || d.DisplayName != "The other" {
		t.Fatalf("other once Redis is back = %+v, %v", d, err)
	}
	if _, ok := dir.docs["sale"]; ok {
		t.Fatal("the deleted room's document is still kept")
	}
}
