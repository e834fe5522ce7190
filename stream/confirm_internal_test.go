package stream

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeReads is a read function whose calls block until the test lets each
// one return, and which records the rooms of every call.
type fakeReads struct {
	mu      sync.Mutex
	calls   [][]string
	started chan int   // the number of each call as it starts
	release chan int64 // the ev each call returns, in order
}

func newFakeReads() *fakeReads {
	return &fakeReads{started: make(chan int, 16), release: make(chan int64)}
}

func (f *fakeReads) read(ctx context.Context, rooms []string) ([]int64, error) {
	f.mu.Lock()
	f.calls = append(f.calls, slices.Sorted(slices.Values(rooms)))
	n := len(f.calls)
	f.mu.Unlock()
	f.started <- n
	select {
	case ev := <-f.release:
		out := make([]int64, len(rooms))
		for i := range out {
			out[i] = ev
		}
		return out, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (f *fakeReads) callsMade() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// startConfirmer runs c until stop is called (at the latest when the
// test ends) and returns once it runs.
func startConfirmer(t *testing.T, c *confirmer) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.run(ctx); close(done) }()
	stop = sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		running := c.running
		c.mu.Unlock()
		if running {
			return stop
		}
		if time.Now().After(deadline) {
			t.Fatal("the confirmer did not start")
		}
		time.Sleep(time.Millisecond)
	}
}

type answer struct {
	ev  int64
	err error
}

// waitAsync calls c.wait in a goroutine and returns where its answer lands.
func waitAsync(c *confirmer, room string) <-chan answer {
	out := make(chan answer, 1)
	go func() {
		ev, err := c.wait(context.Background(), room)
		out <- answer{ev, err}
	}()
	return out
}

// awaitCallers waits until n callers wait for room's next read.
func awaitCallers(t *testing.T, c *confirmer, room string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		got := 0
		if r := c.pending[room]; r != nil {
			got = r.callers
		}
		c.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d callers wait for %s's next read, want %d", got, room, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestConfirmerCallersShareTheNextRead: callers that arrive while a read is
// in flight never get its number (it may predate them); they all wait for
// the next read, which serves them together, every room in one call.
func TestConfirmerCallersShareTheNextRead(t *testing.T) {
	f := newFakeReads()
	c := newConfirmer(f.read)
	startConfirmer(t, c)

	first := waitAsync(c, "r1")
	<-f.started // read 1 is in flight
	var late []<-chan answer
	for range 10 {
		late = append(late, waitAsync(c, "r1"))
	}
	other := waitAsync(c, "r2")
	awaitCallers(t, c, "r1", 10)
	awaitCallers(t, c, "r2", 1)

	f.release <- 7 // read 1 answers
	if a := <-first; a.err != nil || a.ev != 7 {
		t.Fatalf("first caller = %+v, want ev 7", a)
	}
	<-f.started // read 2: every late caller, both rooms
	f.release <- 9
	for i, ch := range late {
		if a := <-ch; a.err != nil || a.ev != 9 {
			t.Fatalf("late caller %d = %+v, want ev 9 from the read that started after it", i, a)
		}
	}
	if a := <-other; a.err != nil || a.ev != 9 {
		t.Fatalf("r2's caller = %+v, want ev 9", a)
	}
	got := f.callsMade()
	want := [][]string{{"r1"}, {"r1", "r2"}}
	if len(got) != len(want) || !slices.Equal(got[0], want[0]) || !slices.Equal(got[1], want[1]) {
		t.Fatalf("reads = %v, want %v (12 callers, 2 reads)", got, want)
	}
}

// TestConfirmerNotRunning: before run starts and after it stops, a caller
// is told at once (it then asks Redis itself), and callers waiting when it
// stops are released.
func TestConfirmerNotRunning(t *testing.T) {
	f := newFakeReads()
	c := newConfirmer(f.read)
	if _, err := c.wait(context.Background(), "r1"); !errors.Is(err, errNotRunning) {
		t.Fatalf("before run: err = %v, want errNotRunning", err)
	}
	stop := startConfirmer(t, c)
	a := waitAsync(c, "r1")
	<-f.started
	late := waitAsync(c, "r1")
	awaitCallers(t, c, "r1", 1)
	stop() // read 1 is cut; the late caller is released
	if got := <-a; got.err == nil {
		t.Fatalf("caller of a cut read = %+v, want an error", got)
	}
	if got := <-late; !errors.Is(got.err, errNotRunning) {
		t.Fatalf("caller waiting at the stop = %+v, want errNotRunning", got)
	}
	if _, err := c.wait(context.Background(), "r1"); !errors.Is(err, errNotRunning) {
		t.Fatalf("after run: err = %v, want errNotRunning", err)
	}
}
