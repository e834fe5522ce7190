package adaptive

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/internal/loop"
	"waitingroom/queue"
)

// orderAcc is one room's orders of one window not yet flushed.
type orderAcc struct {
	orders, errors, acquires, waitUs int64
	heldUs, capUs                    int64 // pool connection time used and available
	runs, activeSum, bound           int64 // admission runs, their active counts, runs with users left waiting
	buckets                          [len(latencyBuckets) + 1]int64
}

type accKey struct {
	room   string
	window int64
}

// Recorder gathers an instance's order signals in memory and flushes them
// to Redis. It is safe for concurrent use.
type Recorder struct {
	rdb    redis.UniversalClient
	rooms  Rooms
	window time.Duration
	mu     sync.Mutex
	acc    map[accKey]*orderAcc
}

// NewRecorder returns a Recorder for windows of the given length (the
// controller's Options.Window), writing with rdb under the keys of rooms.
func NewRecorder(rdb redis.UniversalClient, rooms Rooms, window time.Duration) *Recorder {
	return &Recorder{rdb: rdb, rooms: rooms, window: window, acc: map[accKey]*orderAcc{}}
}

// Window is the length of the signals' windows.
func (r *Recorder) Window() time.Duration { return r.window }

// Order records one finished order of room: its latency and whether it
// failed for an infrastructure reason (a business refusal such as out of
// stock is a healthy answer).
func (r *Recorder) Order(room string, latency time.Duration, failed bool, now time.Time) {
	r.mu.Lock()
	a := r.accumulator(room, now)
	a.orders++
	if failed {
		a.errors++
	}
	a.buckets[bucketOf(latency)]++
	r.mu.Unlock()
}

// PoolUse is what an instance's database pool did over a period: its
// acquires and their total wait, the connections' total hold and the
// connection time it had (pool size × the period).
type PoolUse struct {
	Acquires       int64
	Wait           time.Duration
	Held, Capacity time.Duration
}

// Pool records the pool's use since the last call. The pool is shared by
// the instance's rooms: the figures count for every room with orders
// recorded since the last flush in the current window. taken is false
// when there was none (or no acquire): the caller keeps the figures for
// the next call (Run does, within one window), as an order's acquire may
// come a flush before its end is recorded.
func (r *Recorder) Pool(u PoolUse, now time.Time) (taken bool) {
	if u.Acquires <= 0 {
		return false
	}
	w := windowOf(now, r.window)
	r.mu.Lock()
	for k, a := range r.acc {
		if k.window == w && a.orders > 0 {
			a.acquires += u.Acquires
			a.waitUs += u.Wait.Microseconds()
			a.heldUs += u.Held.Microseconds()
			a.capUs += u.Capacity.Microseconds()
			taken = true
		}
	}
	r.mu.Unlock()
	return taken
}

// Admission records one admission run of room on the instance that runs
// it: the active count after the run and whether the limit bound — users
// were left waiting with every slot of the limit taken. Users left waiting
// beside free slots (passed over as absent) are no sign the limit is too
// low. The window's mean active count is the
// concurrency the limit allowed (Little's law reads the capacity off it).
func (r *Recorder) Admission(room string, active, waiting, limit int64, now time.Time) {
	r.mu.Lock()
	a := r.accumulator(room, now)
	a.runs++
	a.activeSum += active
	if waiting > 0 && active >= limit {
		a.bound++
	}
	r.mu.Unlock()
}

// accumulator is room's accumulator for the window of now, made when
// missing. r.mu is held.
func (r *Recorder) accumulator(room string, now time.Time) *orderAcc {
	k := accKey{room, windowOf(now, r.window)}
	a := r.acc[k]
	if a == nil {
		a = &orderAcc{}
		r.acc[k] = a
	}
	return a
}

// Flush writes the gathered signals to Redis in one pipeline and forgets
// them. On failure they are dropped: a lost second of signals only makes a
// window look thinner. Errors wrap queue.ErrUnavailable.
func (r *Recorder) Flush(ctx context.Context) error {
	r.mu.Lock()
	acc := r.acc
	r.acc = map[accKey]*orderAcc{}
	r.mu.Unlock()
	if len(acc) == 0 {
		return nil
	}
	ttl := 10 * r.window
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k, a := range acc {
			key := keysOf(r.rooms, k.room).signals(k.window)
			if a.orders > 0 {
				p.HIncrBy(ctx, key, "orders", a.orders)
			}
			if a.runs > 0 {
				p.HIncrBy(ctx, key, "runs", a.runs)
				p.HIncrBy(ctx, key, "active_sum", a.activeSum)
				p.HIncrBy(ctx, key, "bound", a.bound)
			}
			if a.errors > 0 {
				p.HIncrBy(ctx, key, "errors", a.errors)
			}
			if a.acquires > 0 {
				p.HIncrBy(ctx, key, "acquires", a.acquires)
				p.HIncrBy(ctx, key, "wait_us", a.waitUs)
			}
			if a.capUs > 0 {
				p.HIncrBy(ctx, key, "held_us", a.heldUs)
				p.HIncrBy(ctx, key, "cap_us", a.capUs)
			}
			for i, c := range a.buckets {
				if c > 0 {
					p.HIncrBy(ctx, key, "b"+strconv.Itoa(i), c)
				}
			}
			p.PExpire(ctx, key, ttl)
		}
		return nil
	})
	if err != nil {
		return unavailable("record signals", err)
	}
	return nil
}

// PoolStats is what the signals need from the database pool: its
// cumulative acquires and their total wait, the connections' cumulative
// hold and the pool's size (pgstore.Store has it).
type PoolStats interface {
	AcquireStats() (acquires int64, wait time.Duration)
	HoldStats() (held time.Duration, size int)
}

// flushEvery is how often Run flushes: a second, or a quarter window when
// windows are shorter (tests).
func (r *Recorder) flushEvery() time.Duration { return min(time.Second, r.window/4) }

// Run flushes this instance's order signals about once a second, with the
// pool's use since the last flush (pool may be nil: no pool figures),
// until ctx is done, and once more at the end.
func (r *Recorder) Run(ctx context.Context, pool PoolStats) {
	var last PoolUse
	lastAt, lastWin := time.Now(), windowOf(time.Now(), r.window)
	read := func(now time.Time) PoolUse {
		n, w := pool.AcquireStats()
		held, size := pool.HoldStats()
		return PoolUse{Acquires: n, Wait: w, Held: held, Capacity: time.Duration(size) * now.Sub(lastAt)}
	}
	if pool != nil {
		last = read(lastAt)
	}
	flush := func(ctx context.Context) {
		if pool != nil {
			now := time.Now()
			cur := read(now)
			d := PoolUse{Acquires: cur.Acquires - last.Acquires, Wait: cur.Wait - last.Wait, Held: cur.Held - last.Held, Capacity: cur.Capacity}
			// Acquires no room's orders took yet wait for the next
			// flush, within their window: an order's acquire and its
			// end may fall on either side of a flush. The connection
			// time available accrues with them.
			if win := windowOf(now, r.window); r.Pool(d, now) || win != lastWin {
				last, lastAt, lastWin = cur, now, win
			}
		}
		_ = r.Flush(ctx) // a lost flush only thins a window
	}
	loop.Every(ctx, r.flushEvery(), flush)
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	flush(fctx)
	cancel()
}

// unavailable marks err as a failure to reach Redis, for the callers'
// one error table (queue.ErrUnavailable answers 503).
func unavailable(op string, err error) error {
	return fmt.Errorf("adaptive: %s: %w: %w", op, queue.ErrUnavailable, err)
}
