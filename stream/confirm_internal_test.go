package stream

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeReads is a read function whose calls block until the test lets each
// one return, and which records the rooms of every call.
type fakeReads struct {
	mu       sync.Mutex
	calls    [][]string
	releases map[int]chan outcome // what call n returns
	started  chan int             // the number of each call as it starts
}

type outcome struct {
	ev  int64
	err error
}

func newFakeReads() *fakeReads {
	return &fakeReads{started: make(chan int, 16), releases: map[int]chan outcome{}}
}

// release lets call n (1-based) return o.
func (f *fakeReads) release(n int, o outcome) { f.releaseOf(n) <- o }

func (f *fakeReads) releaseOf(n int) chan outcome {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := f.releases[n]
	if ch == nil {
		ch = make(chan outcome, 1)
		f.releases[n] = ch
	}
	return ch
}

func (f *fakeReads) read(ctx context.Context, rooms []string) ([]int64, error) {
	f.mu.Lock()
	f.calls = append(f.calls, slices.Sorted(slices.Values(rooms)))
	n := len(f.calls)
	f.mu.Unlock()
	f.started <- n
	select {
	case o := <-f.releaseOf(n):
		if o.err != nil {
			return nil, o.err
		}
		out := make([]int64, len(rooms))
		for i := range out {
			out[i] = o.ev
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

// waitAsync calls c.wait in a goroutine and returns where its answer lands.
func waitAsync(c *confirmer, room string) <-chan outcome {
	out := make(chan outcome, 1)
	go func() {
		ev, err := c.wait(context.Background(), room)
		out <- outcome{ev, err}
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
		if c.next != nil && c.next.rounds[room] != nil {
			got = c.next.rounds[room].callers
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

// TestConfirmerCallersShareTheNextRead: the first two callers read at
// once, each alone (maxReads); callers that arrive while both reads are
// in flight never get their numbers (they may predate them): they wait
// for the next read, which one of them makes for all of them, every room
// in one call, as soon as either read ends.
func TestConfirmerCallersShareTheNextRead(t *testing.T) {
	f := newFakeReads()
	c := newConfirmer(f.read)

	first := waitAsync(c, "r1")
	<-f.started // read 1
	second := waitAsync(c, "r1")
	<-f.started // read 2
	var late []<-chan outcome
	for range 10 {
		late = append(late, waitAsync(c, "r1"))
	}
	other := waitAsync(c, "r2")
	awaitCallers(t, c, "r1", 10)
	awaitCallers(t, c, "r2", 1)

	f.release(2, outcome{ev: 7}) // read 2 answers; read 1 is still out
	if a := <-second; a.err != nil || a.ev != 7 {
		t.Fatalf("second caller = %+v, want ev 7", a)
	}
	if n := <-f.started; n != 3 {
		t.Fatalf("read %d started, want 3", n)
	}
	f.release(3, outcome{ev: 9}) // read 3: every late caller, both rooms
	for i, ch := range late {
		if a := <-ch; a.err != nil || a.ev != 9 {
			t.Fatalf("late caller %d = %+v, want ev 9 from the read that started after it", i, a)
		}
	}
	if a := <-other; a.err != nil || a.ev != 9 {
		t.Fatalf("r2's caller = %+v, want ev 9", a)
	}
	f.release(1, outcome{ev: 6})
	if a := <-first; a.err != nil || a.ev != 6 {
		t.Fatalf("first caller = %+v, want ev 6", a)
	}
	got := f.callsMade()
	want := [][]string{{"r1"}, {"r1"}, {"r1", "r2"}}
	if len(got) != len(want) {
		t.Fatalf("reads = %v, want %v (13 callers, 3 reads)", got, want)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("reads = %v, want %v (13 callers, 3 reads)", got, want)
		}
	}

	// Nothing in flight any more: the next caller reads at once, alone.
	again := waitAsync(c, "r1")
	f.release(<-f.started, outcome{ev: 10})
	if a := <-again; a.err != nil || a.ev != 10 {
		t.Fatalf("a caller after the batches = %+v, want ev 10", a)
	}
}

// TestConfirmerReadFails: a failed read fails its callers (they then ask
// Redis themselves), and the batch gathered meanwhile still gets its read.
func TestConfirmerReadFails(t *testing.T) {
	f := newFakeReads()
	c := newConfirmer(f.read)
	var first []<-chan outcome
	for range maxReads {
		first = append(first, waitAsync(c, "r1"))
		<-f.started
	}
	late := waitAsync(c, "r1")
	awaitCallers(t, c, "r1", 1)
	boom := errors.New("redis down")
	for n := 1; n <= maxReads; n++ {
		f.release(n, outcome{err: boom})
	}
	for _, ch := range first {
		if a := <-ch; !errors.Is(a.err, boom) {
			t.Fatalf("caller of a failed read = %+v, want its error", a)
		}
	}
	f.release(<-f.started, outcome{ev: 3})
	if a := <-late; a.err != nil || a.ev != 3 {
		t.Fatalf("caller of the next read = %+v, want ev 3", a)
	}
}

// TestConfirmerUnderLoad: 32 callers × 200 waits against a read that
// answers the number of reads started so far. Every caller gets a read
// that started after it arrived (a number above the count it saw on
// arrival), nobody is left waiting, and the reads are shared.
func TestConfirmerUnderLoad(t *testing.T) {
	var started atomic.Int64
	c := newConfirmer(func(ctx context.Context, rooms []string) ([]int64, error) {
		n := started.Add(1)
		time.Sleep(50 * time.Microsecond) // a round trip
		out := make([]int64, len(rooms))
		for i := range out {
			out[i] = n
		}
		return out, nil
	})
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Go(func() {
			room := []string{"r1", "r2", "r3"}[w%3]
			for range 200 {
				seen := started.Load()
				ev, err := c.wait(context.Background(), room)
				if err != nil || ev <= seen {
					t.Errorf("wait = %d, %v; want a read started after %d", ev, err, seen)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := started.Load(); n >= 32*200 {
		t.Errorf("%d reads for %d waits: none shared", n, 32*200)
	}
	t.Logf("%d waits, %d reads", 32*200, started.Load())
}
