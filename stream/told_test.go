package stream_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"waitingroom/queue"
	"waitingroom/queue/queuetest"
	"waitingroom/stream"
)

func ptr[T any](v T) *T { return &v }

// slow is a coalescing under which no position change is pushed during a
// test: only what the operator says may reach the streams.
func slow(int64) time.Duration { return time.Hour }

// TestPauseAndMessageArePushedAtOnce: pausing, speaking and resuming reach
// every waiting stream at once whatever its band, and pre-queue streams
// too; polls answered from memory say the same.
func TestPauseAndMessageArePushedAtOnce(t *testing.T) {
	f := newFixture(t, stream.Options{Coalesce: slow})
	var tickets []int64
	waiting := map[string]*reader{}
	for i := range 5 {
		u := "w" + strconv.Itoa(i)
		waiting[u] = f.subscribe(u)
		st, _ := f.q.Status(context.Background(), "r1", u)
		tickets = append(tickets, st.Ticket)
	}
	now, err := f.rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	f.update(queue.RoomUpdate{OpensAt: ptr(now.Add(time.Hour))})
	pre := f.subscribe("p0")
	all := map[string]*reader{"p0": pre}
	for u, r := range waiting {
		all[u] = r
	}
	told := func(paused bool, message string) func() bool {
		return func() bool {
			for _, r := range all {
				l := r.latest.Load()
				if l == nil || l.Status.Paused != paused || l.Status.Message != message {
					return false
				}
			}
			return true
		}
	}
	f.update(queue.RoomUpdate{Paused: ptr(true)})
	waitFor(t, "every stream to say paused", told(true, ""))
	f.update(queue.RoomUpdate{Message: ptr("back at 10:30")})
	waitFor(t, "every stream to carry the message", told(true, "back at 10:30"))
	if st, ok := f.hub.Position("r1", tickets[4]); !ok || !st.Paused || st.Message != "back at 10:30" || st.Position != 5 {
		t.Fatalf("poll from memory = %+v, %v", st, ok)
	}
	f.update(queue.RoomUpdate{Paused: ptr(false), Message: ptr("")})
	waitFor(t, "every stream to say resumed, without a message", told(false, ""))
	for u, r := range waiting {
		if l := r.latest.Load(); l.Status.State != queue.Waiting || l.Status.Position != f.zrank(u) {
			t.Fatalf("%s: %+v, want WAITING at %d", u, l.Status, f.zrank(u))
		}
	}
	if l := pre.latest.Load(); l.Status.State != queue.PreQueue {
		t.Fatalf("pre-queue stream: %+v", l.Status)
	}
}

// TestIdleDropEndsTheStreamWithItsReason: a stream whose user the
// admission run dropped as idle ends with a gone update marked Idle; one
// whose user left ends with a plain gone.
func TestIdleDropEndsTheStreamWithItsReason(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	q := queue.New(rdb, queue.Options{Prefix: prefix, IdleTimeout: 200 * time.Millisecond})
	if err := q.EnsureRoom(context.Background(), "r1", queue.RoomConfig{EntryTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, rdb: rdb, prefix: prefix, q: q}
	f.hub = stream.New(stream.Options{Source: q, Coalesce: everyChange, ResyncEvery: 100 * time.Millisecond, SweepEvery: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.hub.Run(ctx); close(done) }()
	t.Cleanup(func() { f.hub.Close(); cancel(); <-done })
	idle, left := f.subscribe("idle"), f.subscribe("left")
	if _, err := q.Leave(context.Background(), "r1", "left"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := q.Admit(context.Background(), "r1", 8); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both streams to end", func() bool {
		a, b := idle.latest.Load(), left.latest.Load()
		return a != nil && a.Gone && b != nil && b.Gone
	})
	if !idle.latest.Load().Idle || left.latest.Load().Idle {
		t.Fatalf("idle stream's last update %+v, left stream's %+v; want Idle only on the first", idle.latest.Load(), left.latest.Load())
	}
}
