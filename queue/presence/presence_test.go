package presence_test

import (
	"context"
	"testing"
	"time"

	"waitingroom/queue"
	"waitingroom/queue/presence"
	"waitingroom/queue/queuetest"
)

// streams is one room's stream holders.
type streams []string

func (s streams) Rooms() []string            { return []string{"r1"} }
func (s streams) Users(room string) []string { return s }

// TestRunWritesExpectedReturns: a poller is written expected back within
// the grace of the interval they were told, a stream holder within
// StreamGrace; nobody else is touched.
func TestRunWritesExpectedReturns(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	q := queue.New(rdb, queue.Options{Prefix: prefix, Grace: time.Millisecond, IdleTimeout: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	if err := q.EnsureRoom(ctx, "r1", queue.RoomConfig{Target: 0, EntryTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"poller", "streamer", "quiet"} {
		if _, err := q.Enter(ctx, "r1", u); err != nil {
			t.Fatal(err)
		}
	}
	p := presence.New(q, streams{"streamer"}, time.Hour)
	p.Seen("r1", "poller", 2*time.Second)
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	back := func(user string) time.Duration {
		due, err := rdb.ZScore(ctx, q.RoomKey("r1", "seen"), user).Result()
		if err != nil {
			t.Fatal(err)
		}
		now, err := rdb.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		return time.UnixMilli(int64(due)).Sub(now)
	}
	// One flush touches each grace's users in a call of its own, in no
	// set order: wait for both.
	queuetest.WaitFor(t, "the first flush", func() bool { return back("poller") > time.Second && back("streamer") > time.Second })
	if got, most := back("poller"), presence.Grace(2*time.Second); got <= presence.Grace(2*time.Second)-presence.Tick-time.Second || got > most {
		t.Fatalf("poller expected back in %v; want about %v", got, most)
	}
	if got := back("streamer"); got <= presence.StreamGrace-2*time.Second || got > presence.StreamGrace {
		t.Fatalf("stream holder expected back in %v; want about %v", got, presence.StreamGrace)
	}
	if got := back("quiet"); got > 0 {
		t.Fatalf("a user nobody saw is expected back in %v", got)
	}
}
