package stream

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"waitingroom/queue"
	"waitingroom/queue/queuetest"
)

// TestHubForgetsRoomsNobodyAsksAbout: a room polled here is tracked; once
// nobody polls it, streams it or asks its forecast for ForgetAfter, it is
// no longer re-read; a room with a stream open here stays tracked however
// long; a poll tracks a forgotten room again.
func TestHubForgetsRoomsNobodyAsksAbout(t *testing.T) {
	q, _ := queuetest.Queue(t, 0, time.Minute)
	ctx := context.Background()
	if err := q.EnsureRoom(ctx, "r2", queue.RoomConfig{Target: 0, EntryTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	h := New(Options{Source: q, ResyncEvery: time.Hour, ForgetAfter: time.Minute, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	st := queuetest.Enter(t, q, "alice")
	h.Position("r1", st.Ticket)
	sub := h.Subscribe("r2", "bob", queue.Status{State: queue.Waiting, Position: 1})
	defer sub.Close()
	h.Resync(ctx)
	if h.state("r1") == nil || h.state("r2") == nil {
		t.Fatal("the polled and the streamed room are not tracked")
	}
	h.forget(time.Now().Add(30 * time.Second))
	if h.state("r1") == nil {
		t.Fatal("r1 forgotten before ForgetAfter")
	}
	h.forget(time.Now().Add(2 * time.Minute))
	if h.roomPtr("r1", false) != nil {
		t.Fatal("r1 still tracked a ForgetAfter after its last poll")
	}
	if h.state("r2") == nil {
		t.Fatal("r2 forgotten although a stream is open on it here")
	}
	if _, ok := h.Position("r1", st.Ticket); ok {
		t.Fatal("a forgotten room answered a poll from memory before it was read again")
	}
	h.Resync(ctx)
	if got, ok := h.Position("r1", st.Ticket); !ok || got.Position != 1 {
		t.Fatalf("r1 polled again and re-read: %+v, %v; want position 1 from memory", got, ok)
	}
}

// TestHubHandsEventsToOnEvent: every event heard that may bring a room
// work, of a room tracked here or not, reaches OnEvent, and every
// subscription OnSubscribed: the admission loop's wake-ups. An admission
// run's own event does not: its runner knows.
func TestHubHandsEventsToOnEvent(t *testing.T) {
	q, _ := queuetest.Queue(t, 5, time.Minute)
	if err := q.EnsureRoom(context.Background(), "r2", queue.RoomConfig{Target: 5, EntryTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	rooms := make(chan string, 16)
	subscribed := make(chan struct{}, 4)
	h := New(Options{Source: q, ResyncEvery: time.Hour, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnEvent:      func(room string) { rooms <- room },
		OnSubscribed: func() { subscribed <- struct{}{} }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.drain(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	select {
	case <-subscribed:
	case <-time.After(10 * time.Second):
		t.Fatal("OnSubscribed not called")
	}
	next := func(want, what string) {
		t.Helper()
		select {
		case r := <-rooms:
			if r != want {
				t.Fatalf("OnEvent(%q), want %s (%s)", r, want, what)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not reach OnEvent", what)
		}
	}
	queuetest.Enter(t, q, "alice") // the first arrival publishes
	next("r1", "r1's first arrival (r1 is not tracked here)")
	// alice's admission publishes, then bob's first arrival in r2: the
	// next room handed over is r2 (one connection hears them in order).
	if res := queuetest.Admit(t, q, 5); len(res.Admitted) != 1 {
		t.Fatalf("admitted %v, want alice", res.Admitted)
	}
	if _, err := q.Enter(ctx, "r2", "bob"); err != nil {
		t.Fatal(err)
	}
	next("r2", "r2's first arrival, after r1's admission")
}
