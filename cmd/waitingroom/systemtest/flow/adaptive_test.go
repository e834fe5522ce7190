package flow

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"waitingroom/cmd/waitingroom/systemtest"
)

func TestFaultsRefusedWhenDisabled(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(nil)
	r := systemtest.Do(t, "PUT", in.Admin+"/admin/faults", systemtest.TestAdminToken, map[string]string{"orderDelay": "300ms"})
	if r.Status != 403 || r.Str("error") != "faults_disabled" || r.Str("message") == "" {
		t.Fatalf("PUT faults while disabled = %d %s", r.Status, r.Raw)
	}
	if r := systemtest.Do(t, "GET", in.Admin+"/admin/faults", systemtest.TestAdminToken, nil); r.Status != 200 || r.Body["enabled"] != false || r.Num("orderDelayMs") != 0 {
		t.Fatalf("GET faults = %d %s", r.Status, r.Raw)
	}
	if r := systemtest.Do(t, "PUT", in.Admin+"/admin/faults", "", map[string]string{"orderDelay": "1s"}); r.Status != 401 {
		t.Fatalf("PUT faults without the admin token = %d", r.Status)
	}
}

func TestFaultsInput(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_FAULT_INJECTION": "on"})
	for _, body := range []string{`{}`, `{"orderDelay":"soon"}`, `{"orderDelay":"-1s"}`, `{"orderDelay":"31s"}`, `{"orderDelay":true}`, `not json`, `{"orderDelay":"1s"} x`} {
		if r := systemtest.Do(t, "PUT", in.Admin+"/admin/faults", systemtest.TestAdminToken, body); r.Status != 400 || r.Str("error") != "invalid_request" {
			t.Errorf("PUT faults %s = %d %s", body, r.Status, r.Raw)
		}
	}
	if r := systemtest.Do(t, "PUT", in.Admin+"/admin/faults", systemtest.TestAdminToken, `{"orderDelay":"250ms"}`); r.Status != 200 || r.Num("orderDelayMs") != 250 {
		t.Fatalf("PUT faults = %d %s", r.Status, r.Raw)
	}
	// Another instance reads it from Redis.
	other := e.Start(map[string]string{"WR_FAULT_INJECTION": "on"})
	if r := systemtest.Do(t, "GET", other.Admin+"/admin/faults", systemtest.TestAdminToken, nil); r.Str("orderDelay") != "250ms" || r.Body["enabled"] != true {
		t.Fatalf("GET faults on another instance = %s", r.Raw)
	}
	if r := systemtest.Do(t, "PUT", in.Admin+"/admin/faults", systemtest.TestAdminToken, `{"orderDelay":0}`); r.Status != 200 || r.Num("orderDelayMs") != 0 {
		t.Fatalf("PUT faults 0 = %d %s", r.Status, r.Raw)
	}
}

func TestAdminRoomMode(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_ADAPTIVE_MIN": "3", "WR_ADAPTIVE_MAX": "50"})
	r := in.AdminRoom("default")
	sig, _ := r.Body["signals"].(map[string]any)
	if r.Str("mode") != "fixed" || r.Num("minActive") != 3 || r.Num("maxActive") != 50 || sig == nil || sig["stale"] != true || sig["windowSeconds"] != 10.0 {
		t.Fatalf("room doc = %s", r.Raw)
	}
	if v, ok := r.Body["lastChange"]; !ok || v != nil {
		t.Fatalf("lastChange = %v, want null", v)
	}
	for _, k := range []string{"orders", "errors", "errorRate", "p90Ms", "baselineP90Ms", "poolWaitMs"} {
		if _, ok := sig[k]; !ok {
			t.Errorf("signals lacks %s: %s", k, r.Raw)
		}
	}
	put := func(body string) systemtest.Response {
		return systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/default", systemtest.TestAdminToken, body)
	}
	for _, body := range []string{`{"mode":"auto"}`, `{"mode":1}`, `{"minActive":-1}`, `{"maxActive":2000000}`, `{"minActive":10,"maxActive":5}`, `{"minActive":60}`} {
		if r := put(body); r.Status != 400 || r.Str("error") != "invalid_request" {
			t.Errorf("PUT %s = %d %s", body, r.Status, r.Raw)
		}
	}
	if r := put(`{"mode":"adaptive","minActive":4,"maxActive":12}`); r.Status != 200 || r.Str("mode") != "adaptive" || r.Num("minActive") != 4 || r.Num("maxActive") != 12 {
		t.Fatalf("PUT adaptive = %d %s", r.Status, r.Raw)
	}
	if r := put(`{"minActive":0}`); r.Num("minActive") != 3 || r.Num("maxActive") != 12 {
		t.Fatalf("PUT minActive 0 = %s", r.Raw)
	}
	if r := put(`{"mode":"fixed"}`); r.Str("mode") != "fixed" {
		t.Fatalf("PUT fixed = %s", r.Raw)
	}
}

// TestETAWithheldUntilMeasured: a room that has just opened withholds the
// estimate (etaKnown false, no etaSeconds): it has measured neither how
// long a slot is held nor how many admitted users never order. Once
// orders have ended and the first admissions are old enough to tell, a
// waiting user's poll gives one, and the operator sees what it rests on.
func TestETAWithheldUntilMeasured(t *testing.T) {
	systemtest.LongScenario(t)
	e := systemtest.NewEnv(t)
	// The users in the line do not poll while they wait (the test serves
	// the front alone), so presence-aware admission would pass over each
	// user whose wait outlasted its presence, as happened on a loaded
	// machine where serving the line took minutes: it is off here, and a
	// user the test reaches too late is a no-show, as below.
	in := e.Start(map[string]string{"WR_TARGET_ACTIVE": "2", "WR_ENTRY_TTL": "8s", "WR_ADMIT_INTERVAL": "100ms", "WR_PRESENCE_ADMISSION": "off"})
	type waiter struct{ user, qt string }
	// Each user logs in once: a login (BCrypt) per enter made the loop
	// below so slow on a loaded machine that the users' entry windows
	// ran out before the test came to them, and the room never moved.
	access := map[string]string{}
	enterAs := func(u string) systemtest.Response {
		r := systemtest.Do(t, "POST", in.Base+"/api/v1/rooms/default/enter", access[u], nil)
		if r.Str("queueToken") == "" {
			t.Fatalf("enter %s: %d %s", u, r.Status, r.Raw)
		}
		return r
	}
	var line []waiter
	for i := range systemtest.TestUsers {
		access[systemtest.User(i+1)] = in.Login(systemtest.User(i + 1))
		r := enterAs(systemtest.User(i + 1))
		line = append(line, waiter{systemtest.User(i + 1), r.Str("queueToken")})
		if i == systemtest.TestUsers-1 && (r.Body["etaKnown"] != false || r.Body["etaSeconds"] != nil) {
			t.Fatalf("enter in a room not measured yet = %s", r.Raw)
		}
	}
	// Serve the line from the front: each user orders once READY, then
	// queues again at the back, so the room keeps moving. How soon the
	// estimate comes depends on how fast the room moves, so the test does
	// not bound the time: it fails once the room has moved enough for the
	// estimator to know (measurable) and several samples later it still
	// does not.
	var (
		last     systemtest.Response
		admitted []time.Time // when the test saw each user READY
		orders   int
		since    time.Time // when the room first was measurable
		giveUp   = time.Now().Add(5 * time.Minute)
	)
	for {
		if last = in.Position("default", line[len(line)-1].qt); last.Body["etaKnown"] == true {
			break
		}
		if measurable(admitted, orders, 8*time.Second) {
			if since.IsZero() {
				since = time.Now()
			} else if time.Since(since) > 5*time.Second {
				t.Fatalf("no estimate 5 s after the room was measured (%d orders, %d admissions): %s", orders, len(admitted), last.Raw)
			}
		}
		w := line[0]
		p := in.Position("default", w.qt)
		if time.Now().After(giveUp) {
			t.Fatalf("the room never moved enough to be measured in 5 minutes (%d orders): the front's %s, the back's %s", orders, p.Raw, last.Raw)
		}
		switch {
		case p.Status == 404:
			// Its entry window ended before the test came to it (entering
			// the line took longer than a window, on a loaded machine): a
			// no-show, who queues again at the back.
			line = append(line[1:], waiter{w.user, enterAs(w.user).Str("queueToken")})
			continue
		case p.Str("status") != "READY":
			time.Sleep(20 * time.Millisecond)
			continue
		}
		admitted = append(admitted, time.Now())
		if o := in.Order(w.qt, p.Str("entryToken"), 1, 1); o.Status != 201 {
			// Seen READY just before its window ended (the line took
			// longer than a window to enter): a no-show too.
			exp, err := time.Parse(time.RFC3339Nano, p.Str("entryExpiresAt"))
			if o.Status == 403 && o.Str("error") == "entry_token_invalid" && err == nil && time.Until(exp) < time.Second {
				line = append(line[1:], waiter{w.user, enterAs(w.user).Str("queueToken")})
				continue
			}
			t.Fatalf("order of %s = %d %s (READY until %s)", w.user, o.Status, o.Raw, p.Str("entryExpiresAt"))
		}
		orders++
		line = append(line[1:], waiter{w.user, enterAs(w.user).Str("queueToken")})
	}
	if last.Num("etaSeconds") < 1 || last.Str("status") != "WAITING" {
		t.Fatalf("estimate = %s", last.Raw)
	}
	r := systemtest.Do(t, "GET", in.Admin+"/admin/stats", systemtest.TestAdminToken, nil)
	if !strings.Contains(r.Raw, `"holdSeconds"`) || !strings.Contains(r.Raw, `"medianEtaKnown":true`) {
		t.Fatalf("stats = %s", r.Raw)
	}
}

// measurable tells whether the estimator has what it needs to know
// (docs/design.md, "When there is no estimate"): at least 20 orders ended
// (the hold), and ten users admitted within a 10 s stretch that ended an
// entry window (ttl) ago, whose no-shows have since expired (the no-show
// share), the estimator sampling since before that stretch. admitted are
// when users were seen READY, at or after their admission; a margin of
// two seconds and two users covers the estimator's once-a-second samples.
func measurable(admitted []time.Time, orders int, ttl time.Duration) bool {
	const margin = 2 * time.Second
	if orders < 20 || admitted[0].After(time.Now().Add(-ttl-10*time.Second-margin)) {
		return false // too few orders, or samples not yet that old
	}
	to := time.Now().Add(-ttl - margin)
	from := to.Add(-10*time.Second + margin)
	n := 0
	for _, at := range admitted {
		if !at.Before(from) && !at.After(to) {
			n++
		}
	}
	return n >= 12
}

// limitChange is one "admission limit changed" log line.
type limitChange struct {
	from, to, window int64
	reason           string
}

var changeRe = regexp.MustCompile(`msg="admission limit changed" room=default from=(\d+) to=(\d+) reason=(\S+) window=(\d+)`)

func limitChanges(ins ...*systemtest.Instance) []limitChange {
	var out []limitChange
	for _, in := range ins {
		for _, m := range changeRe.FindAllStringSubmatch(in.Logs.String(), -1) {
			from, _ := strconv.ParseInt(m[1], 10, 64)
			to, _ := strconv.ParseInt(m[2], 10, 64)
			w, _ := strconv.ParseInt(m[4], 10, 64)
			out = append(out, limitChange{from: from, to: to, window: w, reason: m[3]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].window < out[j].window })
	return out
}

// TestAdaptiveLimitFollowsSlowdown: two instances serve a room in adaptive
// mode under steady ordering, the room's admission (and so its controller)
// run by one of them. With an order delay injected (pg_sleep in the
// transaction, holding one of 4 pool connections on each instance),
// acquires queue for the pool and the limit is cut for it (pool_wait)
// until a window shows the pool's acquire wait low again; with the delay
// removed the pool is idle while users wait, and the limit grows for
// capacity. Asserted is what the rule guarantees from a window's signals
// alone, with no memory of an earlier latency to race: the reasons and
// directions of the changes, their bounds, and that no window's limit was
// changed twice (one leader per window). How far the limit falls or grows
// is not: it follows how long this machine takes to tell users and serve
// them.
//
// The scenario is sized so that the two phases cannot overlap, however
// loaded the machine: the capacity rule sets about 0.95 × the pools'
// connections ÷ the share of an admitted user's time spent holding one.
// Each user thinks 200 ms between READY and the order (as a shopper reads
// the page), so a healthy order, even one slowed tenfold by a busy CPU,
// holds a connection for a small share of it and the start's 16 slots
// stand; a delayed order (800 ms) holds one for most of it, so the 8
// connections sustain about 10 slots and the start's 16 queue. The users
// start one by one, and the slowdown begins only once the limit stands at
// the start again: the first admission's burst reaches the pool together
// and may be cut for it, which is not the slowdown's cut. The limit's
// floor is 8, where fast orders still fill a window with the 3 samples
// the rule needs (at a floor of 2 so few orders made a window that the
// limit held for want of samples and never grew back).
func TestAdaptiveLimitFollowsSlowdown(t *testing.T) {
	systemtest.LongScenario(t)
	const (
		window  = 400 * time.Millisecond
		minL    = 8 // see above
		maxL    = 32
		workers = 16
		think   = 200 * time.Millisecond
		delay   = 800 * time.Millisecond
	)
	e := systemtest.NewEnv(t)
	vars := map[string]string{
		"WR_ADMIT_INTERVAL": "20ms", "WR_TARGET_ACTIVE": "16", "WR_DB_POOL": "4",
		"WR_ADAPTIVE_WINDOW": window.String(), "WR_ADAPTIVE_MIN": strconv.Itoa(minL), "WR_ADAPTIVE_MAX": strconv.Itoa(maxL),
		"WR_ADAPTIVE_MIN_SAMPLES": "3", "WR_ADAPTIVE_P90_CEILING": "2s", "WR_FAULT_INJECTION": "on",
	}
	a, b := e.Start(vars), e.Start(vars)
	if r := systemtest.Do(t, "PUT", a.Admin+"/admin/rooms/default", systemtest.TestAdminToken, `{"mode":"adaptive"}`); r.Status != 200 {
		t.Fatalf("PUT adaptive = %d %s", r.Status, r.Raw)
	}
	room := func() systemtest.Response { return a.AdminRoom("default") }
	signals := func(r systemtest.Response) map[string]any { m, _ := r.Body["signals"].(map[string]any); return m }

	// Users log in once (logins use the pool too), then enter, wait for
	// READY and order, again and again, half through each instance.
	type worker struct {
		in     *systemtest.Instance
		access string
	}
	ws := make([]worker, workers)
	for i := range ws {
		in := a
		if i%2 == 1 {
			in = b
		}
		ws[i] = worker{in, in.Login(systemtest.User(i + 1))}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	t.Cleanup(func() { close(stop) })
	pause := func(d time.Duration) bool {
		select {
		case <-stop:
			return false
		case <-time.After(d):
			return true
		}
	}
	for i, w := range ws {
		wg.Go(func() {
			if !pause(time.Duration(i) * window / 4) {
				return
			}
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := systemtest.Do(t, "POST", w.in.Base+"/api/v1/rooms/default/enter", w.access, nil)
				qt := r.Str("queueToken")
				for r.Str("status") == "WAITING" {
					if !pause(25 * time.Millisecond) {
						return
					}
					r = w.in.Position("default", qt)
				}
				if r.Str("status") != "READY" {
					continue
				}
				if !pause(think) {
					return
				}
				w.in.Order(qt, r.Str("entryToken"), i%3+1, 1)
			}
		})
	}
	windowNow := func() int64 { return time.Now().UnixMilli() / window.Milliseconds() }

	t.Cleanup(func() {
		if t.Failed() { // what the controller saw, for a failure under a loaded machine
			t.Logf("limit changes %+v; room now %s", limitChanges(a, b), room().Raw)
		}
	})
	// Healthy: a baseline forms, and the limit stands at the start (or
	// above it) in a window read with orders.
	var before int64
	systemtest.WaitWithin(t, 60*time.Second, "a healthy window with a baseline at the start's limit", func() bool {
		r := room()
		s := signals(r)
		before = r.Num("targetActive")
		return s["stale"] == false && s["baselineP90Ms"].(float64) > 0 && before >= 16
	})
	slowFrom := windowNow()
	if r := systemtest.Do(t, "PUT", a.Admin+"/admin/faults", systemtest.TestAdminToken, `{"orderDelay":"`+delay.String()+`"}`); r.Status != 200 {
		t.Fatalf("PUT faults = %d %s", r.Status, r.Raw)
	}
	// Slow: acquires queue for the pool, and a window that shows it cuts
	// the limit below the start (pool_wait); then a window with orders
	// shows the pool's acquire wait low again.
	systemtest.WaitWithin(t, 60*time.Second, "a pool_wait cut under the slowdown", func() bool {
		for _, c := range limitChanges(a, b) {
			if c.window > slowFrom && c.reason == "pool_wait" && c.to < c.from && c.to < before {
				return true
			}
		}
		return false
	})
	// The window's limit is not asserted with the low wait either: when
	// the wait is low the controller raises the limit at that very step.
	systemtest.WaitWithin(t, 30*time.Second, "a window with a low pool wait", func() bool {
		s := signals(room())
		return s["stale"] == false && s["orders"].(float64) > 0 && s["poolWaitMs"].(float64) < 50
	})
	low := room().Num("targetActive")
	slowTo := windowNow()
	if r := systemtest.Do(t, "PUT", b.Admin+"/admin/faults", systemtest.TestAdminToken, `{"orderDelay":"0s"}`); r.Status != 200 {
		t.Fatalf("PUT faults 0 = %d %s", r.Status, r.Raw)
	}
	// Recovered: the pool is mostly idle while users wait, and the limit
	// grows (×2 a window at most) back to the start. Under the slowdown
	// the pool is full, so the capacity is about the pool's own size.
	systemtest.WaitWithin(t, 60*time.Second, "the limit to grow back to the start", func() bool { return room().Num("targetActive") >= before })
	close(stop)
	wg.Wait()
	stop = make(chan struct{}) // for the cleanup

	// What the design guarantees, whatever the machine's load: at most one
	// change a window across instances, the limit within its bounds, a
	// pool_wait cut below the start while orders are slow, and growth for
	// capacity once they are fast again (from the window in which the delay
	// was removed: its step reads the fast part). How many windows the first cut
	// takes is not asserted: it depends on when each instance's fault
	// reload and the controller's step fall on a loaded machine.
	changes := limitChanges(a, b)
	seen := map[int64]bool{}
	var slowMin int64 = maxL
	// The delay reaches every instance within about a second (a few
	// windows here), so the first windows after the PUT may still be fast
	// and even grow; what must hold is that the slowdown brings cuts.
	firstCut, grewAfter := limitChange{}, false
	for _, c := range changes {
		if seen[c.window] {
			t.Errorf("window %d changed twice: %+v", c.window, changes)
		}
		seen[c.window] = true
		if c.to < minL || c.to > maxL {
			t.Errorf("limit %d outside [%d, %d]", c.to, minL, maxL)
		}
		if c.window > slowFrom && c.window <= slowTo {
			if firstCut.reason == "" && c.to < c.from && c.reason == "pool_wait" {
				firstCut = c
			}
			slowMin = min(slowMin, c.to)
		}
		if c.window >= slowTo && c.to > c.from && c.reason == "capacity" {
			grewAfter = true
		}
	}
	if firstCut.reason == "" {
		t.Errorf("no pool_wait cut under the slowdown (windows %d..%d): %+v", slowFrom+1, slowTo, changes)
	}
	if slowMin >= before {
		t.Errorf("lowest limit under the slowdown %d, before %d", slowMin, before)
	}
	if !grewAfter {
		t.Errorf("no capacity increase after the slowdown ended: %+v", changes)
	}
	t.Logf("limit before %d, low %d, now %d; changes (slowdown in windows %d..%d): %+v", before, low, room().Num("targetActive"), slowFrom+1, slowTo, changes)
}
