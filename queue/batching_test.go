package queue_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/internal/batch"
	"waitingroom/queue"
	"waitingroom/queue/queuetest"
)

// The queue's scripts through its batch runner (package batch): what a
// lost script cache, a held round trip and concurrent enters do. They are
// the queue's tests, not batch's: they read the runner's queue of waiting
// callers through export_test.go.

// holdHook holds every script sent alone until gate is closed (telling
// held), records the size of every pipeline of scripts, and answers the first
// pipeline's scripts NOSCRIPT without sending them, as a Redis that lost
// its script cache would.
type holdHook struct {
	gate chan struct{}
	held chan struct{}

	mu        sync.Mutex
	pipelines []int
}

type noScript struct{}

func (noScript) Error() string { return "NOSCRIPT No matching script. Please use EVAL." }
func (noScript) RedisError()   {}

func (h *holdHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *holdHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "evalsha" {
			select {
			case h.held <- struct{}{}:
			default:
			}
			<-h.gate
		}
		return next(ctx, cmd)
	}
}

func (h *holdHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if cmds[0].Name() != "evalsha" {
			return next(ctx, cmds) // a new connection's set-up
		}
		h.mu.Lock()
		h.pipelines = append(h.pipelines, len(cmds))
		first := len(h.pipelines) == 1
		h.mu.Unlock()
		if first {
			for _, c := range cmds {
				c.SetErr(noScript{})
			}
			return noScript{}
		}
		return next(ctx, cmds)
	}
}

// TestConcurrentEntersShareARoundTrip: while two round trips are in
// flight, further enters wait and then go out together as one pipeline;
// each caller gets its own answer (a script Redis no longer knows is run
// again alone), and a caller that gives up while waiting returns at once
// without stopping the others.
func TestConcurrentEntersShareARoundTrip(t *testing.T) {
	q, rdb := mustQueue(t, 0, time.Minute)
	mustEnter(t, q, "u0") // the script is loaded
	h := &holdHook{gate: make(chan struct{}), held: make(chan struct{}, 2)}
	rdb.AddHook(h)

	var wg sync.WaitGroup
	got := make([]queue.Status, 13)
	errs := make([]error, 13)
	enter := func(ctx context.Context, i int) {
		defer wg.Done()
		got[i], errs[i] = q.Enter(ctx, "r1", "u"+strconv.Itoa(i))
	}
	wg.Add(2)
	go enter(context.Background(), 1)
	go enter(context.Background(), 2)
	<-h.held
	<-h.held
	for i := 3; i <= 12; i++ {
		wg.Add(1)
		go enter(context.Background(), i)
	}
	waitFor(t, "ten enters waiting", func() bool { return queue.BatchWaiting(q) == 10 })

	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() {
		_, err := q.Enter(ctx, "r1", "quitter")
		gaveUp <- err
	}()
	waitFor(t, "the eleventh waiting", func() bool { return queue.BatchWaiting(q) == 11 })
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) || !errors.Is(err, queue.ErrUnavailable) {
		t.Fatalf("a waiting caller that gave up: %v, want ErrUnavailable wrapping context.Canceled", err)
	}

	close(h.gate)
	wg.Wait()
	tickets := map[int64]bool{}
	for i := 1; i <= 12; i++ {
		if errs[i] != nil || got[i].State != queue.Waiting || !got[i].New {
			t.Fatalf("enter u%d: %+v, %v", i, got[i], errs[i])
		}
		tickets[got[i].Ticket] = true
	}
	if len(tickets) != 12 {
		t.Fatalf("tickets %v: want 12 distinct", tickets)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.pipelines) != 1 || h.pipelines[0] != 11 {
		t.Fatalf("pipelines sent %v, want one of 11 (ten enters and the one that gave up)", h.pipelines)
	}
}

// TestBatchedEnterUnreachable: a batch that cannot reach Redis answers
// every caller ErrUnavailable.
func TestBatchedEnterUnreachable(t *testing.T) {
	q, rdb := mustQueue(t, 0, time.Minute)
	mustEnter(t, q, "u0")
	h := &holdHook{gate: make(chan struct{}), held: make(chan struct{}, 2)}
	rdb.AddHook(h)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = q.Enter(context.Background(), "r1", "v"+strconv.Itoa(i))
		}()
		if i == 1 {
			<-h.held
			<-h.held
		}
	}
	waitFor(t, "four enters waiting", func() bool { return queue.BatchWaiting(q) == 4 })
	_ = rdb.Close() // Redis is out of reach from here on
	close(h.gate)
	wg.Wait()
	for i, err := range errs {
		var ne net.Error
		if !errors.Is(err, queue.ErrUnavailable) && !errors.As(err, &ne) {
			t.Errorf("enter v%d: %v, want ErrUnavailable", i, err)
		}
	}
}

// TestSharedRunner: a queue given a Runner (Options.Batch) sends its
// scripts through it, so they wait for the round trips of the Runner's
// other callers (an instance's rate limiter) and share the next one.
func TestSharedRunner(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	shared := batch.New(rdb)
	q := queue.New(rdb, queue.Options{Prefix: prefix, Batch: shared})
	ctx := context.Background()
	if err := q.EnsureRoom(ctx, "r1", queue.RoomConfig{Target: 0, EntryTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	other := redis.NewScript("return 1")
	if err := other.Load(ctx, rdb).Err(); err != nil {
		t.Fatal(err)
	}
	mustEnter(t, q, "u0") // the enter script is loaded
	h := &holdHook{gate: make(chan struct{}), held: make(chan struct{}, 2)}
	rdb.AddHook(h)

	var wg sync.WaitGroup
	for range batch.MaxInFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, err := shared.Run(ctx, other, nil).Int(); err != nil || v != 1 {
				t.Errorf("the other caller's script: %v, %v", v, err)
			}
		}()
		<-h.held
	}
	entered := make(chan error, 1)
	go func() {
		st, err := q.Enter(ctx, "r1", "u1")
		if err == nil && st.State != queue.Waiting {
			err = fmt.Errorf("status %+v", st)
		}
		entered <- err
	}()
	waitFor(t, "the enter waiting on the shared runner", func() bool { return shared.Waiting() == 1 })
	if n := queue.BatchWaiting(q); n != 1 {
		t.Fatalf("the queue's runner has %d waiting, want the shared one's 1", n)
	}
	close(h.gate)
	wg.Wait()
	if err := <-entered; err != nil {
		t.Fatalf("enter through the shared runner: %v", err)
	}
}
