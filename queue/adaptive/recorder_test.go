package adaptive_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue"
	"waitingroom/queue/adaptive"
	"waitingroom/queue/queuetest"
)

// poolFake counts acquires the way pgstore.Store does; started is closed at
// the first read.
type poolFake struct {
	mu       sync.Mutex
	acquires int64
	wait     time.Duration
	held     time.Duration
	reads    int // AcquireStats calls: Run's start, then one per flush
	once     sync.Once
	started  chan struct{}
}

func (p *poolFake) AcquireStats() (int64, time.Duration) {
	p.once.Do(func() { close(p.started) })
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reads++
	return p.acquires, p.wait
}

func (p *poolFake) HoldStats() (time.Duration, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held, 4
}

func (p *poolFake) readCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reads
}

func (p *poolFake) add(n int64, wait time.Duration) {
	p.mu.Lock()
	p.acquires += n
	p.wait += wait
	p.held += 10 * time.Millisecond * time.Duration(n)
	p.mu.Unlock()
}

// TestRecorderRun: Run flushes what was recorded once more when its context
// ends, with the pool's acquires and wait since Run started (not those
// before), into the window's hash under the room's hash tag.
func TestRecorderRun(t *testing.T) {
	q, rdb := mustQueue(t, 5, time.Minute)
	const win = 24 * time.Hour // one window for the whole test
	r := adaptive.NewRecorder(rdb, q, win)
	pool := &poolFake{started: make(chan struct{})}
	pool.add(7, time.Second) // before Run: not this recorder's to report
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { r.Run(ctx, pool); close(done) }()
	<-pool.started
	// The orders' acquires, then their ends (as an order goes): a
	// periodic flush anywhere in between loses nothing.
	pool.add(2, 30*time.Millisecond)
	now := time.Now()
	r.Order("r1", 5*time.Millisecond, false, now)
	r.Order("r1", 5*time.Millisecond, true, now)
	cancel()
	<-done
	key, got := signalsOf(t, q, rdb, "r1", now, win)
	for field, want := range map[string]string{"orders": "2", "errors": "1", "acquires": "2", "wait_us": "30000", "held_us": "20000"} {
		if got[field] != want {
			t.Errorf("%s = %q, want %q (hash %v)", field, got[field], want, got)
		}
	}
	if c, _ := strconv.ParseInt(got["cap_us"], 10, 64); c <= 0 {
		t.Errorf("cap_us = %q, want the pool's connection time since Run started", got["cap_us"])
	}
	if ttl := rdb.PTTL(t.Context(), key).Val(); ttl <= 0 || ttl > 10*win {
		t.Errorf("signals TTL = %v, want within 10 windows", ttl)
	}
}

// TestRecorderKeepsAcquiresUntilAnOrderTakesThem: acquires made before any
// order of the window was recorded (an order's acquire comes before its
// end) are not dropped by the flush that found no order to give them to:
// the next flush with orders, in the same window, takes them.
func TestRecorderKeepsAcquiresUntilAnOrderTakesThem(t *testing.T) {
	q, rdb := mustQueue(t, 5, time.Minute)
	const win = 24 * time.Hour
	r := adaptive.NewRecorder(rdb, q, win)
	pool := &poolFake{started: make(chan struct{})}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { r.Run(ctx, pool); close(done) }()
	<-pool.started
	pool.add(3, 45*time.Millisecond)
	// One periodic flush (about a second) with nobody's orders recorded.
	queuetest.WaitFor(t, "a periodic flush", func() bool { return pool.readCount() >= 2 })
	now := time.Now()
	r.Order("r1", 5*time.Millisecond, false, now)
	cancel()
	<-done
	_, got := signalsOf(t, q, rdb, "r1", now, win)
	if got["orders"] != "1" || got["acquires"] != "3" || got["wait_us"] != "45000" {
		t.Fatalf("signals %v: want the order with the 3 acquires made before it (45 ms)", got)
	}
	if r.Pool(adaptive.PoolUse{Acquires: 2, Wait: time.Millisecond}, time.Now()) {
		t.Fatal("Pool with no order recorded since the flush: taken")
	}
}

// signalsOf reads room's signals hash of the window holding now: its key
// and its fields.
func signalsOf(t *testing.T, q *queue.Queue, rdb *redis.Client, room string, now time.Time, win time.Duration) (string, map[string]string) {
	t.Helper()
	key := q.RoomKey(room, "sig:"+strconv.FormatInt(now.UnixMilli()/win.Milliseconds(), 10))
	got, err := rdb.HGetAll(t.Context(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return key, got
}
