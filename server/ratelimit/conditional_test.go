package ratelimit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue/queuetest"
	"waitingroom/server/ratelimit"
)

// TestInlineConditionalChecks: conditional checks take part in an inline
// decision only when the script says fresh — neither decided nor recorded
// otherwise — and Inline.Refusal puts results back in the order given, the
// skipped ones allowed. A check Of another limit reads that limit's count.
func TestInlineConditionalChecks(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	l := ratelimit.New(rdb, prefix)
	ctx := context.Background()
	work := redis.NewScript(ratelimit.InlineLua + `
local refused = guard(1, 1, ARGV[#ARGV] == 'fresh')
if refused then
  return {'REFUSED', refused}
end
return {'DONE'}
`)
	hour := func(burst int) ratelimit.Limit { return ratelimit.Limit{Rate: 1, Per: time.Hour, Burst: burst} }
	newPlace := ratelimit.Check{Name: "new", Subject: "10.0.0.1", Limit: hour(2), Conditional: true}
	every := ratelimit.Check{Name: "every", Subject: "u1", Limit: hour(100)}
	// A second view of new's count: refuses from its first request.
	gate := ratelimit.Check{Name: "gate", Of: "new", Subject: "10.0.0.1", Limit: hour(1), Conditional: true, PeekOnly: true}
	run := func(fresh bool, checks ...ratelimit.Check) []ratelimit.Result {
		t.Helper()
		in, ok := l.Inline(checks...)
		if !ok {
			t.Fatal("Inline declined on one Redis")
		}
		mode := "held"
		if fresh {
			mode = "fresh"
		}
		v, err := work.Run(ctx, rdb, in.Keys(), append(in.Args(), mode)...).Slice()
		if err != nil {
			t.Fatal(err)
		}
		if v[0] == "DONE" {
			return nil
		}
		var refused *ratelimit.RefusedError
		if err := in.Refusal(v[1].([]any)); !errors.As(err, &refused) {
			t.Fatalf("refusal read as %v, want a RefusedError", err)
		}
		return refused.Results
	}
	for range 5 { // not fresh: the conditional check is never taken
		if rs := run(false, newPlace, every); rs != nil {
			t.Fatalf("not fresh: refused %+v", rs)
		}
	}
	if rs := run(true, newPlace, every); rs != nil {
		t.Fatalf("first fresh request refused: %+v (the earlier ones must not have counted)", rs)
	}
	if rs := run(true, newPlace, every, gate); len(rs) != 3 || !rs[0].Allowed || !rs[1].Allowed || rs[2].Allowed {
		t.Fatalf("with the gate on new's count of 1: %+v, want only the gate refusing, in the order given", rs)
	}
	if rs := run(false, newPlace, every, gate); rs != nil {
		t.Fatalf("not fresh, the gate skipped: refused %+v", rs)
	}
	run(true, newPlace, every) // new's second
	rs := run(true, every, newPlace)
	if len(rs) != 2 || !rs[0].Allowed || rs[1].Allowed || rs[1].RetryAfter < 59*time.Minute {
		t.Fatalf("new's third: %+v, want new refused (second in the order given) for about an hour", rs)
	}
	r, err := l.Peek(ctx, every)
	if err != nil || r[0].Debt < 7*time.Hour+59*time.Minute || r[0].Debt > 8*time.Hour {
		t.Fatalf("every's debt = %+v %v, want 8 recorded (the refused ones recorded nothing)", r, err)
	}
}
