package stream_test

import (
	"context"
	"testing"
	"time"

	"waitingroom/stream"
)

// TestChoresReachTheWriter: a stream's keep-alives, liveness checks and
// expiry come from the hub's sweeps, through Notify and Chores; Expire
// comes once, after the end asked for, and a stream that asked for
// nothing gets nothing.
func TestChoresReachTheWriter(t *testing.T) {
	f := newFixture(t, stream.Options{Coalesce: everyChange})
	ctx := context.Background()
	st, err := f.q.Enter(ctx, "r1", "u1")
	if err != nil {
		t.Fatal(err)
	}
	sub := f.hub.Subscribe("r1", "u1", st)
	t.Cleanup(sub.Close)
	quiet := f.hub.Subscribe("r1", "u2", st)
	t.Cleanup(quiet.Close)
	end := time.Now().Add(300 * time.Millisecond)
	sub.Schedule(50*time.Millisecond, 30*time.Millisecond, end)

	var got stream.Chore
	expires := 0
	deadline := time.After(10 * time.Second)
	for expires == 0 {
		select {
		case <-sub.Notify():
		case <-deadline:
			t.Fatalf("no Expire; chores seen %b", got)
		}
		sub.Take()
		c := sub.Chores()
		if c&stream.Expire != 0 {
			expires++
			if time.Now().Before(end) {
				t.Fatal("Expire before the end asked for")
			}
		}
		got |= c
	}
	if got&stream.Beat == 0 || got&stream.Check == 0 {
		t.Fatalf("chores seen %b, want Beat and Check too", got)
	}
	// No second Expire while beats go on.
	for beats := 0; beats < 3; {
		select {
		case <-sub.Notify():
		case <-deadline:
			t.Fatal("beats stopped")
		}
		c := sub.Chores()
		if c&stream.Expire != 0 {
			t.Fatal("Expire handed out twice")
		}
		if c&stream.Beat != 0 {
			beats++
		}
	}
	quiet.Take() // the initial status
	if c := quiet.Chores(); c != 0 {
		t.Fatalf("a stream that asked for nothing got chores %b", c)
	}
}
