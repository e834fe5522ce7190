package ratelimit

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/internal/batch"
)

var (
	//go:embed gcra_lib.lua
	gcraLib string
	//go:embed gcra.lua
	gcraMain string

	gcra = redis.NewScript(gcraLib + gcraMain)
)

// InlineLua lets another script take Take's decision first, in the same
// call (Inline): it defines the local function guard(k0, a0, fresh), which
// takes the checks on KEYS[k0] on (their arguments from ARGV[a0]: the
// count of unconditional checks, the count of conditional ones, then three
// per check) and returns nil when every one allows (and records them), else
// the results, which Inline.Refusal decodes. The conditional checks
// (Check.Conditional) follow the others and take part only when fresh is
// true. The enter script runs it (queue.Options.EnterGuard), fresh when
// the user takes a new place.
var InlineLua = gcraLib + `
local function guard(k0, a0, fresh)
  local n = tonumber(ARGV[a0])
  if fresh then
    n = n + tonumber(ARGV[a0 + 1])
  end
  local out, all = gcra('take', k0, a0 + 2, n)
  if all then
    return nil
  end
  return out
end
`

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
	rdb     *batch.Runner // decisions of concurrent requests share round trips
	prefix  string
	cluster bool // keys of different slots cannot share a script
}

// New returns a Limiter whose keys live under the instance's key prefix
// (e.g. "wr:"), in the package's own namespace: prefix + "rl:".
func New(rdb batch.Client, prefix string) *Limiter { return NewOn(batch.New(rdb), prefix) }

// NewOn is New on a Runner shared with other callers of scripts (the
// queue's), so that their scripts and the limiter's share round trips.
func NewOn(b *batch.Runner, prefix string) *Limiter {
	_, cluster := b.Client().(*redis.ClusterClient)
	return &Limiter{rdb: b, prefix: prefix + "rl:", cluster: cluster}
}

// Result is one decision.
type Result struct {
	Allowed bool
	// RetryAfter is the exact wait until a request would be allowed.
	RetryAfter time.Duration
	// Debt is how far the subject's theoretical arrival time was ahead of
	// now before the call: positive while it has recorded requests that
	// the passing of time has not yet paid back (InDebt).
	Debt time.Duration
}

// InDebt reports whether the subject had recorded requests not yet paid
// back when it was decided: for a limit that counts failures, "it has been
// failing lately".
func (r Result) InDebt() bool { return r.Debt > 0 }

// Check names one limit applied to one subject.
type Check struct {
	Name, Subject string
	Limit         Limit
	// Slot, when set, is the Redis hash tag of the key: checks decided
	// together by Charge, Refund or Peek must share it so that a Redis
	// Cluster holds their keys on one slot (Take decides checks of
	// different slots too, one script per slot). It should be the part of
	// the subject they share, e.g. the client address.
	Slot string
	// PeekOnly makes the check take part in a decision without ever being
	// recorded (by Take, Charge or Refund): e.g. a limit that must allow
	// the request but is charged separately, later.
	PeekOnly bool
	// Conditional makes the check take part in an inline decision
	// (InlineLua) only when the guarding script says so: the enter
	// script's, only for a user who takes a new place. Take and the others
	// decide it always.
	Conditional bool
	// Of, when set, is the name of the limit whose count the check reads:
	// its key is that limit's for Subject (and Slot), so that one count can
	// be judged under a second limit (a stricter burst, say; usually
	// PeekOnly). Name still names the check in results.
	Of string
}

func (l *Limiter) key(c Check) string {
	name := cmp.Or(c.Of, c.Name)
	if c.Slot != "" {
		return l.prefix + name + ":{" + c.Slot + "}:" + c.Subject
	}
	return l.prefix + name + ":" + c.Subject
}

// Allow decides one request of subject under the limit named name, and
// records it when allowed.
func (l *Limiter) Allow(ctx context.Context, name, subject string, lim Limit) (Result, error) {
	r, err := l.run(ctx, "take", Check{Name: name, Subject: subject, Limit: lim})
	if err != nil {
		return Result{}, err
	}
	return r[0], nil
}

// Take decides one request under every check at once and records it on
// each only if all allow it (all or nothing): a reservation that Refund
// gives back when the request turns out not to count. The results are in
// the order of checks.
//
// The checks need not share a Slot: on one Redis (single or Sentinel) one
// script decides them all. On a Cluster the checks of each slot are
// decided by a script of their own, all sent in one round trip; when one
// slot's checks refuse, what the others recorded is given back at once
// (all or nothing still, though for that moment the others counted the
// request).
func (l *Limiter) Take(ctx context.Context, checks ...Check) ([]Result, error) {
	slots := l.slots(checks)
	if len(slots) <= 1 {
		return l.run(ctx, "take", checks...)
	}
	groups := make([][]Check, len(slots))
	scripts := make([]batch.Script, len(slots))
	for i, at := range slots {
		for _, j := range at {
			groups[i] = append(groups[i], checks[j])
		}
		scripts[i] = l.script("take", groups[i])
	}
	out := make([]Result, len(checks))
	var recorded [][]Check
	var firstErr error
	for i, cmd := range l.rdb.RunAll(ctx, scripts...) {
		rs, err := decode(groups[i], cmd)
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		if allowed(rs) {
			recorded = append(recorded, groups[i])
		}
		for k, j := range slots[i] {
			out[j] = rs[k]
		}
	}
	if firstErr == nil && len(recorded) == len(groups) {
		return out, nil
	}
	// A refusal (or an undecided slot) gives back what the others
	// recorded. A refund that fails leaves the request counted on them:
	// the strict side, and the refusal stands.
	for _, g := range recorded {
		_ = l.Refund(ctx, g...)
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

// slots groups the indexes of checks by the Cluster slot of their keys:
// none on a single Redis, where one script takes them all; else checks of
// one non-empty Slot share a group, and a check without one is a group of
// its own.
func (l *Limiter) slots(checks []Check) [][]int {
	if !l.cluster || len(checks) <= 1 {
		return nil
	}
	var groups [][]int
	at := map[string]int{}
	for i, c := range checks {
		if g, ok := at[c.Slot]; ok && c.Slot != "" {
			groups[g] = append(groups[g], i)
			continue
		}
		at[c.Slot] = len(groups)
		groups = append(groups, []int{i})
	}
	return groups
}

func allowed(rs []Result) bool {
	for _, r := range rs {
		if !r.Allowed {
			return false
		}
	}
	return true
}

// Peek decides as Take would and records nothing.
func (l *Limiter) Peek(ctx context.Context, checks ...Check) ([]Result, error) {
	return l.run(ctx, "peek", checks...)
}

// Charge records one request on every check whether it is allowed or not
// (e.g. a failure found after the work), saturating: a subject charged past
// its limit is refused for at most one emission interval once the charges
// stop, however many there were.
func (l *Limiter) Charge(ctx context.Context, checks ...Check) ([]Result, error) {
	return l.run(ctx, "charge", checks...)
}

// Refund gives back one request on every check, e.g. a reservation taken by
// Take for a request that did not count after all.
func (l *Limiter) Refund(ctx context.Context, checks ...Check) error {
	_, err := l.run(ctx, "refund", checks...)
	return err
}

// Inline is Take's decision on some checks, to be taken inside a script
// of another package that runs InlineLua on its keys and arguments,
// appended to its own, so that the decision and the work it guards cost
// one script: a queue.Guard of the enter script.
type Inline struct {
	checks []Check // as given
	keys   []string
	args   []any
}

// ErrBadRefusal: an inline decision's refusal could not be read.
var ErrBadRefusal = errors.New("ratelimit: malformed refusal")

// RefusedError is an inline decision's refusal (Inline.Refusal): Take's
// results on the checks, in the order given, at least one of which
// refuses. Conditional checks the script left out are allowed.
type RefusedError struct {
	Results []Result
}

func (e *RefusedError) Error() string { return "ratelimit: refused" }

// Inline returns Take's decision on checks for a script that runs
// InlineLua. The conditional checks are moved after the others (Refusal
// undoes it). ok is false where that cannot be (a Redis Cluster: the keys
// are in other slots than the script's); the caller then calls Take first.
func (l *Limiter) Inline(checks ...Check) (in *Inline, ok bool) {
	if l.cluster || len(checks) == 0 {
		return nil, false
	}
	order, n := inlineOrder(checks)
	sc := l.script("take", order)
	// InlineLua's ARGV[a0] and ARGV[a0+1]: the counts, not a mode.
	args := append([]any{n, len(order) - n}, sc.Args[1:]...)
	return &Inline{checks: checks, keys: sc.Keys, args: args}, true
}

// Keys are the decision's keys, for the script's KEYS[k0] on.
func (in *Inline) Keys() []string { return in.keys }

// Args are the decision's arguments, for the script's ARGV[a0] on.
func (in *Inline) Args() []any { return in.args }

// inlineOrder is checks with the conditional ones last, each part in its
// order, and the count of unconditional ones.
func inlineOrder(checks []Check) ([]Check, int) {
	out := make([]Check, 0, len(checks))
	for _, c := range checks {
		if !c.Conditional {
			out = append(out, c)
		}
	}
	n := len(out)
	for _, c := range checks {
		if c.Conditional {
			out = append(out, c)
		}
	}
	return out, n
}

// Refusal decodes the refusal InlineLua returned: a *RefusedError, or an
// error wrapping ErrBadRefusal when it is malformed or refuses nothing.
func (in *Inline) Refusal(reply []any) error {
	checks := in.checks
	v := make([]int64, len(reply))
	for i, x := range reply {
		n, ok := x.(int64)
		if !ok {
			return fmt.Errorf("%w: %s: %v", ErrBadRefusal, checks[0].Name, reply)
		}
		v[i] = n
	}
	order, n := inlineOrder(checks)
	if len(v) == 3*n {
		order = order[:n] // not fresh: the conditional ones took no part
	}
	got, err := results(order, v)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadRefusal, err)
	}
	if allowed(got) {
		return fmt.Errorf("%w: %s: a refusal that refuses nothing: %v", ErrBadRefusal, checks[0].Name, reply)
	}
	// Back to the order of checks: the unconditional ones came first.
	rs := make([]Result, len(checks))
	u, c := 0, n
	for i, ch := range checks {
		j := &u
		if ch.Conditional {
			j = &c
		}
		rs[i] = Result{Allowed: true}
		if *j < len(got) {
			rs[i] = got[*j]
		}
		*j++
	}
	return &RefusedError{Results: rs}
}

// run executes the script in mode on checks and decodes its reply.
func (l *Limiter) run(ctx context.Context, mode string, checks ...Check) ([]Result, error) {
	if len(checks) == 0 {
		return nil, nil
	}
	sc := l.script(mode, checks)
	return decode(checks, l.rdb.Run(ctx, sc.Script, sc.Keys, sc.Args...))
}

// script is the gcra script in mode on checks.
func (l *Limiter) script(mode string, checks []Check) batch.Script {
	keys := make([]string, len(checks))
	args := make([]any, 1, 1+3*len(checks))
	args[0] = mode
	for i, c := range checks {
		keys[i] = l.key(c)
		record := 1
		if c.PeekOnly {
			record = 0
		}
		args = append(args, c.Limit.Interval().Microseconds(), c.Limit.Burst, record)
	}
	return batch.Script{Script: gcra, Keys: keys, Args: args}
}

// decode reads the gcra script's reply on checks.
func decode(checks []Check, cmd *redis.Cmd) ([]Result, error) {
	name := checks[0].Name
	v, err := cmd.Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("ratelimit: %s: %w: %w", name, ErrUnavailable, err)
	}
	return results(checks, v)
}

// results reads the gcra reply v on checks: 3 integers per check.
func results(checks []Check, v []int64) ([]Result, error) {
	name := checks[0].Name
	if len(v) != 3*len(checks) {
		return nil, fmt.Errorf("ratelimit: %s: reply %v", name, v)
	}
	out := make([]Result, len(checks))
	for i := range out {
		out[i] = Result{
			Allowed:    v[3*i] == 1,
			RetryAfter: time.Duration(v[3*i+1]) * time.Microsecond,
			Debt:       time.Duration(v[3*i+2]) * time.Microsecond,
		}
	}
	return out, nil
}
