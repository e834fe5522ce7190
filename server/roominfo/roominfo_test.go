package roominfo

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue"
	"waitingroom/queue/queuetest"
)

// countHook counts the commands and pipelines a client sends.
type countHook struct{ n atomic.Int64 }

func (h *countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}

func (h *countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.n.Add(1); return next(ctx, cmds) }
}

// TestRoomDirectoryServesFromMemory: a crowd asking for rooms, known and
// made up, costs one read of the directory (a set read and one pipeline)
// per second, not one per request; a change shows once the second is up.
func TestRoomDirectoryServesFromMemory(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	q := queue.New(rdb, queue.Options{Prefix: prefix})
	ctx := context.Background()
	name := "Winter sale"
	if _, err := q.UpdateRoom(ctx, "sale", queue.RoomUpdate{DisplayName: &name}, true, queue.RoomConfig{Target: 1}); err != nil {
		t.Fatal(err)
	}
	hook := &countHook{}
	rdb.AddHook(hook)
	dir := &roomDirectory{q: q}
	var wg sync.WaitGroup
	for i := range 400 {
		wg.Go(func() {
			docs, err := dir.get(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			if _, ok := docs["made-up-"+string(rune('a'+i%26))]; ok {
				t.Error("a made-up room was found")
			}
			if d := docs["sale"]; d.DisplayName != "Winter sale" || d.Method != "fifo" || d.Room != "sale" {
				t.Errorf("sale = %+v", d)
			}
		})
	}
	wg.Wait()
	if n := hook.n.Load(); n != 2 {
		t.Fatalf("400 requests cost %d Redis round trips, want 2 (the room set, one pipeline)", n)
	}
	paused := true
	if _, err := q.UpdateRoom(ctx, "sale", queue.RoomUpdate{Paused: &paused}, false, queue.RoomConfig{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(roomInfoFresh + 50*time.Millisecond)
	before := hook.n.Load()
	docs, err := dir.get(ctx)
	if err != nil || !docs["sale"].Paused {
		t.Fatalf("after a second: %+v, %v", docs["sale"], err)
	}
	if n := hook.n.Load() - before; n != 2 {
		t.Fatalf("the refresh cost %d round trips, want 2", n)
	}
}
