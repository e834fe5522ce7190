package local

import (
	"hash/maphash"
	"sync"
	"time"

	"waitingroom/server/ratelimit"
)

const (
	shardCount = 64
	// minSweep: a shard does not sweep before it holds this many subjects.
	minSweep = 1024
	// fullSweepGap: a full shard sweeps at most this often.
	fullSweepGap = time.Second
	// DefaultMaxSubjects bounds the subjects remembered: about 100 MB at
	// worst, for a million users polling one instance at once.
	DefaultMaxSubjects = 1 << 20
)

// Options configure a Limiter.
type Options struct {
	// MaxSubjects bounds the subjects remembered (default
	// DefaultMaxSubjects); beyond it new subjects are not recorded.
	MaxSubjects int
	// Now is the clock, as the time since any fixed origin (default: the
	// monotonic time since New). Tests set it.
	Now func() time.Duration
}

// Limiter is an in-memory GCRA limiter.
type Limiter struct {
	now      func() time.Duration
	seed     maphash.Seed
	perShard int
	shards   [shardCount]shard
}

type shard struct {
	mu      sync.Mutex
	tats    map[string]time.Duration // subject → theoretical arrival time
	sweepAt int                      // sweep when len(tats) reaches it
	swept   time.Duration            // when it last swept
}

// New returns a Limiter.
func New(o Options) *Limiter {
	if o.MaxSubjects <= 0 {
		o.MaxSubjects = DefaultMaxSubjects
	}
	if o.Now == nil {
		start := time.Now()
		o.Now = func() time.Duration { return time.Since(start) }
	}
	l := &Limiter{now: o.Now, seed: maphash.MakeSeed(), perShard: max(1, (o.MaxSubjects+shardCount-1)/shardCount)}
	for i := range l.shards {
		l.shards[i] = shard{tats: map[string]time.Duration{}, sweepAt: min(minSweep, l.perShard)}
	}
	return l
}

// Allow decides one request of subject under lim and records it when
// allowed, as ratelimit.Limiter.Allow does on Redis: allowed when the
// subject's theoretical arrival time (TAT) is at most (burst − 1) ×
// interval ahead of now; an allowed request moves it one interval on.
// RetryAfter is the exact wait until a request would be allowed, Debt how
// far the TAT was ahead of now.
func (l *Limiter) Allow(subject string, lim ratelimit.Limit) ratelimit.Result {
	now := l.now()
	interval := lim.Interval()
	tolerance := time.Duration(max(lim.Burst, 1)) * interval
	sh := &l.shards[maphash.String(l.seed, subject)%shardCount]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	tat, known := sh.tats[subject]
	tat = max(tat, now)
	next := tat + interval
	if allowAt := next - tolerance; now < allowAt {
		return ratelimit.Result{RetryAfter: allowAt - now, Debt: tat - now}
	}
	if known || sh.room(now, l.perShard) {
		sh.tats[subject] = next
	}
	return ratelimit.Result{Allowed: true, Debt: tat - now}
}

// room reports whether a new subject may be recorded, sweeping the
// forgotten ones first when the shard has doubled since its last sweep —
// when full, at most once per fullSweepGap, so that a full shard costs a
// sweep per gap and not per request (under sh.mu).
func (sh *shard) room(now time.Duration, limit int) bool {
	full := len(sh.tats) >= limit
	if len(sh.tats) >= sh.sweepAt && (!full || now-sh.swept >= fullSweepGap) {
		for k, tat := range sh.tats {
			if tat <= now {
				delete(sh.tats, k)
			}
		}
		sh.swept = now
		sh.sweepAt = min(max(2*len(sh.tats), minSweep), limit)
	}
	return len(sh.tats) < limit
}

// Len returns the number of subjects remembered.
func (l *Limiter) Len() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n += len(sh.tats)
		sh.mu.Unlock()
	}
	return n
}
