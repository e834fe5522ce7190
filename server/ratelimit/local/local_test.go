package local_test

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"waitingroom/server/ratelimit"
	"waitingroom/server/ratelimit/local"
)

// clock is a settable test clock.
type clock struct{ t atomic.Int64 }

func (c *clock) now() time.Duration  { return time.Duration(c.t.Load()) }
func (c *clock) set(d time.Duration) { c.t.Store(int64(d)) }
func newLimiter(c *clock, max int) *local.Limiter {
	return local.New(local.Options{Now: c.now, MaxSubjects: max})
}

// TestAllowGCRA: decisions worked out by hand for one request per 500 ms
// with a burst of 5 (the poll pace of the 1 s band): five at once, then
// one per interval, the exact wait on refusal, and a clean slate once the
// theoretical arrival time has passed.
func TestAllowGCRA(t *testing.T) {
	c := &clock{}
	l := newLimiter(c, 0)
	lim := ratelimit.Limit{Rate: 1, Per: 500 * time.Millisecond, Burst: 5}
	ms := time.Millisecond
	steps := []struct {
		at      time.Duration
		allowed bool
		retry   time.Duration
		debt    time.Duration
	}{
		{0, true, 0, 0},                 // TAT 0 → 500
		{0, true, 0, 500 * ms},          // → 1000
		{0, true, 0, 1000 * ms},         // → 1500
		{0, true, 0, 1500 * ms},         // → 2000
		{0, true, 0, 2000 * ms},         // → 2500: the burst of 5 is spent
		{0, false, 500 * ms, 2500 * ms}, // next TAT 3000, allowed from 3000 − 2500 = 500
		{100 * ms, false, 400 * ms, 2400 * ms},
		{500 * ms, true, 0, 2000 * ms}, // → 3000
		{500 * ms, false, 500 * ms, 2500 * ms},
		{10 * time.Second, true, 0, 0}, // TAT long past: as if never seen
	}
	for i, s := range steps {
		c.set(s.at)
		got := l.Allow("room:user", lim)
		if got.Allowed != s.allowed || got.RetryAfter != s.retry || got.Debt != s.debt {
			t.Fatalf("step %d at %v: got %+v, want allowed %v retry %v debt %v", i, s.at, got, s.allowed, s.retry, s.debt)
		}
	}
	// Another subject is untouched by the first one's debt.
	c.set(10 * time.Second)
	for range 5 {
		l.Allow("room:storm", lim)
	}
	if r := l.Allow("room:storm", lim); r.Allowed {
		t.Fatal("the storm's sixth request at once was allowed")
	}
	if r := l.Allow("room:calm", lim); !r.Allowed {
		t.Fatalf("another subject during the storm: %+v", r)
	}
}

// TestBurstUnderConcurrency: 200 requests of one subject at the same
// instant from 50 goroutines: exactly the burst is allowed.
func TestBurstUnderConcurrency(t *testing.T) {
	c := &clock{}
	l := newLimiter(c, 0)
	lim := ratelimit.Limit{Rate: 1, Per: time.Second, Burst: 5}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			for range 4 {
				if l.Allow("r:u", lim).Allowed {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := allowed.Load(); got != 5 {
		t.Fatalf("%d of 200 allowed, want 5", got)
	}
}

// TestMemoryIsBounded: subjects are forgotten once their theoretical
// arrival time passes; past MaxSubjects new subjects are allowed without
// being recorded, while a subject already in debt stays refused.
func TestMemoryIsBounded(t *testing.T) {
	c := &clock{}
	const maxSubjects = 64 * 100
	l := newLimiter(c, maxSubjects)
	lim := ratelimit.Limit{Rate: 1, Per: time.Second, Burst: 1}
	if !l.Allow("r:storm", lim).Allowed || l.Allow("r:storm", lim).Allowed {
		t.Fatal("burst 1: want the first allowed, the second refused")
	}
	for i := range 20_000 {
		if !l.Allow("r:u"+strconv.Itoa(i), lim).Allowed {
			t.Fatalf("new subject %d refused", i)
		}
	}
	if n := l.Len(); n > maxSubjects {
		t.Fatalf("%d subjects remembered, want at most %d", n, maxSubjects)
	}
	if l.Allow("r:storm", lim).Allowed {
		t.Fatal("flooding with new subjects freed the storm")
	}
	// Two seconds on, every TAT has passed: the full shards sweep, and the
	// new subjects are recorded in the room the old ones leave (a second
	// request of a recorded one is refused).
	c.set(2 * time.Second)
	recorded := 0
	for i := range 20_000 {
		u := "r:v" + strconv.Itoa(i)
		l.Allow(u, lim)
		if !l.Allow(u, lim).Allowed {
			recorded++
		}
	}
	if n := l.Len(); n > maxSubjects || recorded < maxSubjects*9/10 || recorded > maxSubjects {
		t.Fatalf("after the old subjects' TATs passed: %d remembered, %d of the new ones recorded; want about %d, at most %d", n, recorded, maxSubjects, maxSubjects)
	}
}

// BenchmarkAllow: one decision, many users polling in parallel.
func BenchmarkAllow(b *testing.B) {
	l := local.New(local.Options{})
	lim := ratelimit.Limit{Rate: 1, Per: 500 * time.Millisecond, Burst: 5}
	keys := make([]string, 100_000)
	for i := range keys {
		keys[i] = "default:" + strconv.Itoa(i)
	}
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(7919))
		for pb.Next() {
			l.Allow(keys[i%len(keys)], lim)
			i++
		}
	})
}
