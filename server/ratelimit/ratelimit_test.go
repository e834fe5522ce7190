package ratelimit_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue/queuetest"
	"waitingroom/server/ratelimit"
)

func TestParse(t *testing.T) {
	good := map[string]ratelimit.Limit{
		"10/1m:5": {Rate: 10, Per: time.Minute, Burst: 5},
		"2/s":     {Rate: 2, Per: time.Second, Burst: 2},
		"30/m":    {Rate: 30, Per: time.Minute, Burst: 30},
		"1/500ms": {Rate: 1, Per: 500 * time.Millisecond, Burst: 1},
	}
	for in, want := range good {
		got, err := ratelimit.Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "10", "x/m", "0/m", "10/", "10/fortnight", "10/m:0", "10/m:x", "-1/s", "10/48h", "2000000/s"} {
		if _, err := ratelimit.Parse(in); err == nil {
			t.Errorf("Parse(%q) accepted", in)
		}
	}
}

func TestBurstThenSteadyRate(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	l := ratelimit.New(rdb, prefix)
	lim := ratelimit.Limit{Rate: 1, Per: time.Hour, Burst: 3}
	ctx := context.Background()
	for i := range 3 {
		if r, err := l.Allow(ctx, "x", "a", lim); err != nil || !r.Allowed {
			t.Fatalf("request %d of the burst: %+v %v", i+1, r, err)
		}
	}
	r, err := l.Allow(ctx, "x", "a", lim)
	if err != nil || r.Allowed {
		t.Fatalf("4th request: %+v %v, want refused", r, err)
	}
	// The next request is allowed one emission interval after the first.
	if r.RetryAfter <= 59*time.Minute || r.RetryAfter > time.Hour {
		t.Fatalf("retry after %v, want just under 1h", r.RetryAfter)
	}
	// Another subject has its own allowance.
	if r, _ := l.Allow(ctx, "x", "b", lim); !r.Allowed {
		t.Fatal("subject b refused")
	}
}

// TestRetryAfterIsHonest: a retry after the returned wait succeeds.
func TestRetryAfterIsHonest(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	l := ratelimit.New(rdb, prefix)
	lim := ratelimit.Limit{Rate: 10, Per: time.Second, Burst: 1}
	ctx := context.Background()
	l.Allow(ctx, "x", "a", lim)
	r, _ := l.Allow(ctx, "x", "a", lim)
	if r.Allowed || r.RetryAfter <= 0 || r.RetryAfter > 100*time.Millisecond {
		t.Fatalf("second request = %+v, want refused for at most 100ms", r)
	}
	time.Sleep(r.RetryAfter)
	if r, _ := l.Allow(ctx, "x", "a", lim); !r.Allowed {
		t.Fatalf("after waiting RetryAfter: %+v", r)
	}
}

// TestConcurrentCallersShareOneLimit: 200 concurrent requests from several
// clients (as several instances would be) are limited as one.
func TestConcurrentCallersShareOneLimit(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	clients := []*ratelimit.Limiter{ratelimit.New(rdb, prefix)}
	for range 2 {
		other := redis.NewClient(rdb.Options())
		t.Cleanup(func() { other.Close() })
		clients = append(clients, ratelimit.New(other, prefix))
	}
	lim := ratelimit.Limit{Rate: 1, Per: time.Hour, Burst: 25}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			r, err := clients[i%len(clients)].Allow(context.Background(), "x", "a", lim)
			if err != nil {
				t.Error(err)
			}
			if r.Allowed {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if allowed.Load() != 25 {
		t.Fatalf("%d allowed, want exactly the burst of 25", allowed.Load())
	}
}

func TestRedisDown(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer rdb.Close()
	if _, err := ratelimit.New(rdb, "x:").Allow(context.Background(), "x", "a", ratelimit.Limit{Rate: 1, Per: time.Second, Burst: 1}); err == nil {
		t.Fatal("no error with Redis down")
	}
}

// BenchmarkAllow is the limiter's cost per request: one script on real Redis.
func BenchmarkAllow(b *testing.B) {
	rdb, prefix := queuetest.Redis(b)
	l := ratelimit.New(rdb, prefix)
	lim := ratelimit.Limit{Rate: 1_000_000, Per: time.Second, Burst: 1_000_000}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := l.Allow(context.Background(), "bench", "a", lim); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"10/1m:5", "2/s", "1/500ms", "", "x", "0/m", "1/1ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ratelimit.Parse(s)
		if err == nil && (l.Rate < 1 || l.Burst < 1 || l.Interval() < time.Microsecond) {
			t.Fatalf("Parse(%q) accepted %+v", s, l)
		}
	})
}

var hourly = ratelimit.Limit{Rate: 1, Per: time.Hour, Burst: 2}

// TestPeekRecordsNothing: any number of peeks leave the allowance whole.
func TestPeekRecordsNothing(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	l := ratelimit.New(rdb, prefix)
	ctx := context.Background()
	c := ratelimit.Check{Name: "x", Subject: "a", Limit: hourly}
	for range 5 {
		r, err := l.Peek(ctx, c)
		if err != nil || !r[0].Allowed || r[0].InDebt() {
			t.Fatalf("peek = %+v %v, want allowed, not in debt", r, err)
		}
	}
	for i := range 2 {
		if r, _ := l.Allow(ctx, "x", "a", hourly); !r.Allowed {
			t.Fatalf("request %d after the peeks refused", i+1)
		}
	}
	r, _ := l.Peek(ctx, c)
	if r[0].Allowed || !r[0].InDebt() || r[0].RetryAfter <= 0 {
		t.Fatalf("peek of an exhausted limit = %+v", r[0])
	}
}

// TestTakeIsAllOrNothing: when one check refuses, none is recorded; Refund
// gives a reservation back.
func TestTakeIsAllOrNothing(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	l := ratelimit.New(rdb, prefix)
	ctx := context.Background()
	wide := ratelimit.Check{Name: "wide", Subject: "s", Slot: "addr", Limit: ratelimit.Limit{Rate: 1, Per: time.Hour, Burst: 10}}
	narrow := ratelimit.Check{Name: "narrow", Subject: "s", Slot: "addr", Limit: ratelimit.Limit{Rate: 1, Per: time.Hour, Burst: 1}}
	if r, err := l.Take(ctx, wide, narrow); err != nil || !r[0].Allowed || !r[1].Allowed {
		t.Fatalf("first take = %+v %v", r, err)
	}
	for range 3 {
		r, err := l.Take(ctx, wide, narrow)
		if err != nil || !r[0].Allowed || r[1].Allowed {
			t.Fatalf("take past the narrow limit = %+v %v, want wide allowed, narrow refused", r, err)
		}
	}
	// Only the first take was recorded on wide: it is one interval in debt.
	r, _ := l.Peek(ctx, wide)
	if d := r[0].Debt; d <= 59*time.Minute || d > time.Hour {
		t.Fatalf("wide's debt = %v, want one interval (1h): refused takes recorded nothing", d)
	}
	if err := l.Refund(ctx, wide, narrow); err != nil {
		t.Fatal(err)
	}
	r, _ = l.Peek(ctx, wide, narrow)
	if !r[0].Allowed || r[0].InDebt() || !r[1].Allowed || r[1].InDebt() {
		t.Fatalf("after the refund = %+v, want both whole", r)
	}
}

// TestTakeAcrossSlots: checks of different slots (an address and a user,
// as enter takes them) are all or nothing too, whether one script decides
// them (one Redis) or one script per slot (a Cluster): a refusal by one
// leaves nothing recorded on the other, and the 429's wait is honest.
func TestTakeAcrossSlots(t *testing.T) {
	for _, split := range []bool{false, true} {
		name := map[bool]string{false: "one script", true: "one script per slot"}[split]
		t.Run(name, func(t *testing.T) {
			rdb, prefix := queuetest.Redis(t)
			l := ratelimit.New(rdb, prefix)
			if split {
				ratelimit.SplitBySlot(l)
			}
			ctx := context.Background()
			addr := ratelimit.Check{Name: "enter_ip", Subject: "10.0.0.1", Limit: ratelimit.Limit{Rate: 1, Per: time.Hour, Burst: 10}}
			user := ratelimit.Check{Name: "enter_user", Subject: "u1", Limit: ratelimit.Limit{Rate: 1, Per: time.Hour, Burst: 1}}
			if r, err := l.Take(ctx, addr, user); err != nil || len(r) != 2 || !r[0].Allowed || !r[1].Allowed {
				t.Fatalf("first take = %+v %v", r, err)
			}
			for range 3 {
				r, err := l.Take(ctx, addr, user)
				if err != nil || !r[0].Allowed || r[1].Allowed || r[1].RetryAfter < 59*time.Minute {
					t.Fatalf("take past the user's limit = %+v %v, want the address allowed, the user refused for about 1h", r, err)
				}
			}
			r, err := l.Peek(ctx, addr)
			if err != nil || r[0].Debt <= 59*time.Minute || r[0].Debt > time.Hour {
				t.Fatalf("address debt = %+v %v, want one interval (1h): refused takes left nothing", r, err)
			}
			// The other way round: the address refuses, the user is not charged.
			other := ratelimit.Check{Name: "enter_user", Subject: "u2", Limit: user.Limit}
			narrowAddr := ratelimit.Check{Name: "enter_ip", Subject: "10.0.0.2", Limit: ratelimit.Limit{Rate: 1, Per: time.Hour, Burst: 1}}
			if _, err := l.Take(ctx, narrowAddr); err != nil {
				t.Fatal(err)
			}
			if r, err := l.Take(ctx, narrowAddr, other); err != nil || r[0].Allowed || !r[1].Allowed {
				t.Fatalf("take past the address's limit = %+v %v", r, err)
			}
			if r, err := l.Peek(ctx, other); err != nil || r[0].InDebt() {
				t.Fatalf("user after a refusal by the address = %+v %v, want nothing recorded", r, err)
			}
		})
	}
}

// TestChargeSaturates: a thousand charges leave the subject refused for at
// most one emission interval, and charged whether allowed or not.
func TestChargeSaturates(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	l := ratelimit.New(rdb, prefix)
	ctx := context.Background()
	c := ratelimit.Check{Name: "x", Subject: "a", Limit: ratelimit.Limit{Rate: 10, Per: time.Minute, Burst: 5}}
	for range 1000 {
		if _, err := l.Charge(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	r, _ := l.Peek(ctx, c)
	if r[0].Allowed || r[0].RetryAfter > 6*time.Second || r[0].Debt > 30*time.Second {
		t.Fatalf("after 1000 charges = %+v, want refused for at most one interval (6s), debt at most burst × interval", r[0])
	}
}

// TestPeekOnlyDecidesButIsNotRecorded: a PeekOnly check can refuse a Take
// but is never written by it.
func TestPeekOnlyDecidesButIsNotRecorded(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	l := ratelimit.New(rdb, prefix)
	ctx := context.Background()
	rec := ratelimit.Check{Name: "rec", Slot: "a", Limit: ratelimit.Limit{Rate: 1, Per: time.Hour, Burst: 10}}
	gate := ratelimit.Check{Name: "gate", Slot: "a", Limit: ratelimit.Limit{Rate: 1, Per: time.Hour, Burst: 1}, PeekOnly: true}
	for range 3 {
		if r, err := l.Take(ctx, rec, gate); err != nil || !r[0].Allowed || !r[1].Allowed {
			t.Fatalf("take = %+v %v, want allowed (the peek-only check is never spent)", r, err)
		}
	}
	gate.PeekOnly = false
	if _, err := l.Charge(ctx, gate); err != nil {
		t.Fatal(err)
	}
	gate.PeekOnly = true
	if r, _ := l.Take(ctx, rec, gate); r[1].Allowed || !r[0].Allowed {
		t.Fatalf("take with the gate exhausted = %+v, want refused by the gate", r)
	}
	if r, _ := l.Peek(ctx, rec); r[0].Debt > 3*time.Hour || r[0].Debt <= 2*time.Hour {
		t.Fatalf("rec's debt = %v, want 3 recorded takes (the refused one recorded nothing)", r[0].Debt)
	}
}

// TestInlineDecidesAsTake: a script running InlineLua on Inline's keys
// and arguments decides as Take does — all or nothing, the refusal's
// results (Inline.Refusal) Take's — and goes on with its own work only
// when every check allows; on a Cluster Inline declines (the keys are in
// other slots).
func TestInlineDecidesAsTake(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	l := ratelimit.New(rdb, prefix)
	ctx := context.Background()
	// The script's own work: count the requests it was let through for.
	work := redis.NewScript(ratelimit.InlineLua + `
local refused = guard(2, 1)
if refused then
  return {'REFUSED', refused}
end
return {'DONE', redis.call('INCR', KEYS[1])}
`)
	done := prefix + "done"
	addr := ratelimit.Check{Name: "enter_ip", Subject: "10.0.0.1", Limit: ratelimit.Limit{Rate: 1, Per: time.Hour, Burst: 10}}
	user := ratelimit.Check{Name: "enter_user", Subject: "u1", Limit: ratelimit.Limit{Rate: 1, Per: time.Hour, Burst: 1}}
	run := func(checks ...ratelimit.Check) (done int64, rs []ratelimit.Result) {
		t.Helper()
		in, ok := l.Inline(checks...)
		if !ok {
			t.Fatal("Inline declined on one Redis")
		}
		v, err := work.Run(ctx, rdb, append([]string{prefix + "done"}, in.Keys()...), in.Args()...).Slice()
		if err != nil {
			t.Fatal(err)
		}
		if v[0] == "DONE" {
			return v[1].(int64), nil
		}
		var refused *ratelimit.RefusedError
		if err := in.Refusal(v[1].([]any)); !errors.As(err, &refused) {
			t.Fatalf("refusal read as %v, want a RefusedError", err)
		}
		return 0, refused.Results
	}
	if n, rs := run(addr, user); n != 1 || rs != nil {
		t.Fatalf("first request: work %d, refusal %+v; want the work done", n, rs)
	}
	for range 3 {
		n, rs := run(addr, user)
		if n != 0 || len(rs) != 2 || !rs[0].Allowed || rs[1].Allowed || rs[1].RetryAfter < 59*time.Minute {
			t.Fatalf("past the user's limit: work %d, refusal %+v; want no work, the user refused for about 1h", n, rs)
		}
	}
	if r, err := l.Peek(ctx, addr); err != nil || r[0].Debt <= 59*time.Minute || r[0].Debt > time.Hour {
		t.Fatalf("address debt = %+v %v, want one interval (1h): refused requests left nothing", r, err)
	}
	if n, err := rdb.Get(ctx, done).Int(); err != nil || n != 1 {
		t.Fatalf("work done %d times (%v), want 1", n, err)
	}
	one, _ := l.Inline(addr)
	for _, bad := range [][]any{{"x", int64(0), int64(0)}, {int64(1), int64(0)}, {int64(1), int64(0), int64(0)}} {
		if err := one.Refusal(bad); !errors.Is(err, ratelimit.ErrBadRefusal) {
			t.Fatalf("refusal %v read as %v: want ErrBadRefusal (malformed, or refusing nothing)", bad, err)
		}
	}
	ratelimit.SplitBySlot(l)
	if _, ok := l.Inline(addr, user); ok {
		t.Fatal("Inline accepted on a Cluster")
	}
}
