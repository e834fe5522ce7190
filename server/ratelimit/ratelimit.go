package ratelimit

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed gcra.lua
var gcraSrc string

var gcra = redis.NewScript(gcraSrc)

// ErrUnavailable: Redis could not decide; the caller applies the limit's
// policy (fail open or closed).
var ErrUnavailable = errors.New("rate limiter unavailable")

// Limit is Rate requests per Per, with bursts of up to Burst at once.
type Limit struct {
	Rate  int
	Per   time.Duration
	Burst int
}

// Interval is the emission interval: the steady time between requests.
func (l Limit) Interval() time.Duration { return l.Per / time.Duration(l.Rate) }

func (l Limit) String() string {
	return fmt.Sprintf("%d/%s:%d", l.Rate, l.Per, l.Burst)
}

// Parse reads "RATE/PERIOD[:BURST]", e.g. "10/1m:5" (ten a minute, five at
// once) or "2/s" (burst defaults to the rate). PERIOD is a Go duration; a
// bare unit means one of it ("s", "m", "h").
func Parse(s string) (Limit, error) {
	rate, rest, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Limit{}, fmt.Errorf("limit %q: want RATE/PERIOD[:BURST], e.g. 10/1m:5", s)
	}
	period, burst, hasBurst := strings.Cut(rest, ":")
	var l Limit
	var err error
	if l.Rate, err = strconv.Atoi(rate); err != nil || l.Rate < 1 || l.Rate > 1_000_000 {
		return Limit{}, fmt.Errorf("limit %q: rate must be an integer from 1 to 1000000", s)
	}
	if period != "" && (period[0] < '0' || period[0] > '9') {
		period = "1" + period
	}
	if l.Per, err = time.ParseDuration(period); err != nil || l.Per < time.Millisecond || l.Per > 24*time.Hour {
		return Limit{}, fmt.Errorf("limit %q: period must be a duration from 1ms to 24h", s)
	}
	l.Burst = l.Rate
	if hasBurst {
		if l.Burst, err = strconv.Atoi(burst); err != nil || l.Burst < 1 || l.Burst > 1_000_000 {
			return Limit{}, fmt.Errorf("limit %q: burst must be an integer from 1 to 1000000", s)
		}
	}
	if l.Interval() < time.Microsecond {
		return Limit{}, fmt.Errorf("limit %q: more than one request per microsecond", s)
	}
	return l, nil
}

// Limiter decides limits on Redis.
type Limiter struct {
	rdb    redis.Scripter
	prefix string
}

// New returns a Limiter whose keys start with prefix (e.g. "wr:rl:").
func New(rdb redis.Scripter, prefix string) *Limiter {
	return &Limiter{rdb: rdb, prefix: prefix}
}

// Result is one decision.
type Result struct {
	Allowed bool
	// RetryAfter is the exact wait until a request would be allowed.
	RetryAfter time.Duration
}

// Allow decides one request of subject under the limit named name.
func (l *Limiter) Allow(ctx context.Context, name, subject string, lim Limit) (Result, error) {
	key := l.prefix + name + ":" + subject
	v, err := gcra.Run(ctx, l.rdb, []string{key}, lim.Interval().Microseconds(), lim.Burst).Int64Slice()
	if err != nil {
		return Result{}, fmt.Errorf("ratelimit: %s: %w: %w", name, ErrUnavailable, err)
	}
	if len(v) != 2 {
		return Result{}, fmt.Errorf("ratelimit: %s: reply %v", name, v)
	}
	return Result{Allowed: v[0] == 1, RetryAfter: time.Duration(v[1]) * time.Microsecond}, nil
}
