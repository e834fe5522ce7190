package operator

// Scenario tests of the operator's seat on the server side: the rooms'
// history shared by every instance, the audit log of admin changes, the
// live figures of /admin/stats, and the management address leading to the
// dashboard.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/admin/audit"
)

// TestOperatorHistorySharedByInstances: two instances record one history
// (one point a second between them, in order, no second twice); either
// answers the same points, a reload (a new request) sees them again, and
// since returns only the newer ones.
func TestOperatorHistorySharedByInstances(t *testing.T) {
	systemtest.LongScenario(t)
	e := systemtest.NewEnv(t)
	a, b := e.Start(nil), e.Start(nil)
	for i := 1; i <= 3; i++ {
		a.Enter(systemtest.User(i), "default")
	}
	var pts [][]float64
	systemtest.WaitFor(t, "four points", func() bool {
		_, pts = systemtest.HistoryOf(t, a, "default", "")
		return len(pts) >= 4
	})
	fields, fromB := systemtest.HistoryOf(t, b, "default", "")
	if strings.Join(fields, ",") != "t,waiting,active,targetActive,admitted,rate,etaLast,etaMid" {
		t.Fatalf("fields %v", fields)
	}
	if len(fromB) < len(pts) || fmt.Sprint(fromB[:len(pts)]) != fmt.Sprint(pts) {
		t.Fatalf("instance b's history differs:\n a %v\n b %v", pts, fromB)
	}
	for i, p := range fromB {
		if len(p) != 8 || int64(p[0])%1000 != 0 {
			t.Fatalf("point %v", p)
		}
		if i > 0 && p[0] <= fromB[i-1][0] {
			t.Fatalf("points out of order or twice: %v then %v", fromB[i-1], p)
		}
	}
	last := fromB[len(fromB)-1]
	if last[1] != 3 || last[2] != 0 || last[3] != 5 {
		t.Fatalf("last point %v, want 3 waiting, 0 active, targetActive 5", last)
	}
	_, newer := systemtest.HistoryOf(t, a, "default", fmt.Sprintf("?since=%d", int64(fromB[len(fromB)-2][0])))
	if len(newer) == 0 || newer[0][0] != last[0] {
		t.Fatalf("since the second-to-last point: %v (last %v)", newer, last)
	}
	if r := systemtest.Do(t, "GET", a.Admin+"/admin/rooms/default/history?since=yesterday", systemtest.TestAdminToken, nil); r.Status != 400 {
		t.Fatalf("a bad since: %d %s", r.Status, r.Raw)
	}
	if r := systemtest.Do(t, "GET", a.Admin+"/admin/rooms/nosuch/history", systemtest.TestAdminToken, nil); r.Status != 404 || r.Str("error") != "room_not_found" {
		t.Fatalf("an unknown room: %d %s", r.Status, r.Raw)
	}
	if r := systemtest.Do(t, "GET", a.Admin+"/admin/rooms/default/history", "", nil); r.Status != 401 {
		t.Fatalf("without the token: %d", r.Status)
	}
}

// TestOperatorAuditLog: every successful PUT under /admin is recorded —
// who (the token's fingerprint, the address), what (method, path, body as
// sent) and the document before and after — newest first, the same from
// every instance, and logged; refused changes are not.
func TestOperatorAuditLog(t *testing.T) {
	systemtest.Parallel(t)
	e := systemtest.NewEnv(t)
	a, b := e.Start(nil), e.Start(nil)
	put := func(in *systemtest.Instance, path, body string, want int) {
		t.Helper()
		if r := systemtest.Do(t, "PUT", in.Admin+path, systemtest.TestAdminToken, body); r.Status != want {
			t.Fatalf("PUT %s %s: %d %s", path, body, r.Status, r.Raw)
		}
	}
	put(a, "/admin/rooms/default", `{"paused": true}`, 200)
	put(b, "/admin/rooms/sale", `{"targetActive":7}`, 200)
	put(a, "/admin/access", `{"deny":["203.0.113.0/24"]}`, 200)
	put(a, "/admin/rooms/default", `{"targetActive":-1}`, 400)
	put(a, "/admin/faults", `{"orderDelay":"1s"}`, 403) // fault injection is off
	if r := systemtest.Do(t, "PUT", a.Admin+"/admin/rooms/default", "", `{"paused":false}`); r.Status != 401 {
		t.Fatalf("without the token: %d", r.Status)
	}

	got := systemtest.AuditOf(t, b, "")
	if len(got) != 3 {
		t.Fatalf("%d entries, want 3 (refused changes are not recorded): %+v", len(got), got)
	}
	acl, created, paused := got[0], got[1], got[2]
	if acl.Path != "/admin/access" || created.Path != "/admin/rooms/sale" || paused.Path != "/admin/rooms/default" {
		t.Fatalf("not newest first: %s, %s, %s", acl.Path, created.Path, paused.Path)
	}
	if paused.Method != "PUT" || paused.Body != `{"paused": true}` || paused.Token != audit.Fingerprint(systemtest.TestAdminToken) ||
		len(paused.Token) != 8 || paused.Addr != "127.0.0.1" || time.Since(paused.At) > time.Minute {
		t.Fatalf("entry %+v", paused)
	}
	field := func(doc json.RawMessage, k string) any {
		var m map[string]any
		_ = json.Unmarshal(doc, &m)
		return m[k]
	}
	if field(paused.Before, "paused") != false || field(paused.After, "paused") != true || field(paused.After, "room") != "default" {
		t.Fatalf("room before %s after %s", paused.Before, paused.After)
	}
	if string(created.Before) != "null" || field(created.After, "targetActive") != float64(7) {
		t.Fatalf("a created room: before %s after %s", created.Before, created.After)
	}
	if deny, _ := field(acl.After, "deny").([]any); len(deny) != 1 || deny[0] != "203.0.113.0/24" {
		t.Fatalf("access lists after: %s", acl.After)
	}
	if one := systemtest.AuditOf(t, a, "?limit=1"); len(one) != 1 || one[0].Path != "/admin/access" {
		t.Fatalf("limit=1: %+v", one)
	}
	if r := systemtest.Do(t, "GET", a.Admin+"/admin/audit?limit=0", systemtest.TestAdminToken, nil); r.Status != 400 {
		t.Fatalf("limit=0: %d", r.Status)
	}
	if logs := a.Logs.String(); strings.Count(logs, `msg="admin change"`) != 2 || !strings.Contains(logs, "token="+audit.Fingerprint(systemtest.TestAdminToken)) ||
		strings.Contains(logs, systemtest.TestAdminToken) {
		t.Fatalf("instance a's log of its two changes:\n%s", logs)
	}
}

// TestOperatorAuditBoundsTheBody: a body past 2 KiB is kept cut, and said
// to be.
func TestOperatorAuditBoundsTheBody(t *testing.T) {
	systemtest.Parallel(t)
	in := systemtest.NewEnv(t).Start(nil)
	deny := make([]string, 300)
	for i := range deny {
		deny[i] = fmt.Sprintf("198.51.100.%d", i%256)
	}
	body, _ := json.Marshal(map[string]any{"deny": deny})
	if r := systemtest.Do(t, "PUT", in.Admin+"/admin/access", systemtest.TestAdminToken, string(body)); r.Status != 200 {
		t.Fatalf("PUT access: %d %s", r.Status, r.Raw)
	}
	e := systemtest.AuditOf(t, in, "")[0]
	if !e.BodyTruncated || len(e.Body) != audit.MaxBody || !strings.HasPrefix(string(body), e.Body) {
		t.Fatalf("body of %d bytes kept as %d bytes, truncated %v", len(body), len(e.Body), e.BodyTruncated)
	}
}

// TestOperatorStats: /admin/stats shows this instance's open streams by
// transport, its 429s by limit, the pool's acquire wait, and per room the
// longest current wait and the median ETA shown.
func TestOperatorStats(t *testing.T) {
	systemtest.LongScenario(t)
	e := systemtest.NewEnv(t)
	in := e.Start(systemtest.Limited(map[string]string{"WR_LIMIT_LOGIN_ID": "1/1h:1"}))
	for range 3 {
		systemtest.Do(t, "POST", in.Base+"/api/v1/auth/login", "", map[string]string{"loginId": systemtest.User(40), "password": "wrong"})
	}
	// An idle room has no history: the first arrival wakes it, and the
	// history records it from the next second. Users who enter once it
	// does have their waits known exactly (the first arrival's is known
	// to be at least what it shows), so the first one leaves again.
	first := in.Enter(systemtest.User(9), "default").Str("queueToken")
	systemtest.WaitFor(t, "the history's first point", func() bool { _, p := systemtest.HistoryOf(t, in, "default", ""); return len(p) > 0 })
	if r := systemtest.Do(t, "POST", in.Base+"/api/v1/rooms/default/leave", first, nil); r.Status != 204 {
		t.Fatalf("leave: %d %s", r.Status, r.Raw)
	}
	var qt string
	for i := 1; i <= 4; i++ {
		qt = in.Enter(systemtest.User(i), "default").Str("queueToken")
	}
	systemtest.SSEFrom(t, in, "127.0.0.1", "default", qt)
	var d struct {
		Streams         map[string]int64 `json:"streams"`
		RateLimited     map[string]int64 `json:"rateLimited"`
		PoolAcquireWait struct {
			Count       uint64  `json:"count"`
			MeanSeconds float64 `json:"meanSeconds"`
		} `json:"poolAcquireWait"`
		Rooms []struct {
			Room               string `json:"room"`
			Waiting            int64  `json:"waiting"`
			Paused             bool   `json:"paused"`
			LongestWaitSeconds *int64 `json:"longestWaitSeconds"`
			LongestWaitAtLeast bool   `json:"longestWaitAtLeast"`
			MedianEtaSeconds   *int64 `json:"medianEtaSeconds"`
			MedianEtaKnown     bool   `json:"medianEtaKnown"`
			EtaWithheld        string `json:"etaWithheld"`
		} `json:"rooms"`
	}
	systemtest.WaitWithin(t, 15*time.Second, "a longest wait of 2 s", func() bool {
		r := systemtest.Do(t, "GET", in.Admin+"/admin/stats", systemtest.TestAdminToken, nil)
		if r.Status != 200 {
			t.Fatalf("stats: %d %s", r.Status, r.Raw)
		}
		d.Rooms = nil
		if err := json.Unmarshal([]byte(r.Raw), &d); err != nil || len(d.Rooms) != 1 {
			t.Fatalf("stats %s: %v", r.Raw, err)
		}
		w := d.Rooms[0].LongestWaitSeconds
		return w != nil && *w >= 2
	})
	var limited int64
	for _, n := range d.RateLimited {
		limited += n
	}
	if d.Streams["sse"] != 1 || d.Streams["ws"] != 0 || limited != 2 || d.PoolAcquireWait.Count == 0 {
		t.Fatalf("instance figures %+v", d)
	}
	r := d.Rooms[0]
	if r.Room != "default" || r.Waiting != 4 || r.Paused || r.LongestWaitAtLeast || *r.LongestWaitSeconds > 60 ||
		r.MedianEtaSeconds != nil || r.MedianEtaKnown || r.EtaWithheld != "measuring" {
		t.Fatalf("room figures %+v", r)
	}
	// Paused, the users are shown no ETA, and neither is the operator.
	if res := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/default", systemtest.TestAdminToken, `{"paused":true}`); res.Status != 200 {
		t.Fatal(res.Raw)
	}
	if res := systemtest.Do(t, "GET", in.Admin+"/admin/stats", systemtest.TestAdminToken, nil); !strings.Contains(res.Raw, `"medianEtaSeconds":null`) {
		t.Fatalf("paused: %s", res.Raw)
	}
}

// TestOperatorRootLeadsToDashboard: GET / on the management address
// answers 302 to the dashboard, which needs no token.
func TestOperatorRootLeadsToDashboard(t *testing.T) {
	systemtest.Parallel(t)
	in := systemtest.NewEnv(t).Start(nil)
	noFollow := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noFollow.Get(in.Admin + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 302 || res.Header.Get("Location") != "/admin/" {
		t.Fatalf("GET / = %d Location %q", res.StatusCode, res.Header.Get("Location"))
	}
	if r := systemtest.Do(t, "GET", in.Admin+"/admin/", "", nil); r.Status != 200 || !strings.Contains(r.Raw, "<html") {
		t.Fatalf("the dashboard: %d", r.Status)
	}
}

// TestAdminRefusalsNameTheVariables: the admin API's refusals that ask the
// operator to change a setting name its variable (the admin package names
// only what cmd hands it, admin.Names), word for word as before.
func TestAdminRefusalsNameTheVariables(t *testing.T) {
	in := systemtest.NewEnv(t).Start(nil)
	for _, c := range []struct {
		method, path, token string
		body                any
		status              int
		message             string
	}{
		{"GET", "/admin/rooms", "", nil, 401, "the admin API needs Authorization: Bearer $WR_ADMIN_TOKEN"},
		{"PUT", "/admin/faults", systemtest.TestAdminToken, map[string]string{"orderDelay": "1s"}, 403,
			"fault injection is off: start the server with WR_FAULT_INJECTION=on"},
		{"PUT", "/admin/rooms/default", systemtest.TestAdminToken, map[string]any{"gateway": map[string]any{"pass": "session"}}, 400,
			"gateway settings need gateway mode (WR_UPSTREAM)"},
		{"DELETE", "/admin/rooms/default", systemtest.TestAdminToken, nil, 409,
			"room default is in WR_ROOMS, so every instance would create it again at once: remove it from WR_ROOMS everywhere first"},
	} {
		if r := systemtest.Do(t, c.method, in.Admin+c.path, c.token, c.body); r.Status != c.status || r.Str("message") != c.message {
			t.Errorf("%s %s: %d %s, want %d %q", c.method, c.path, r.Status, r.Raw, c.status, c.message)
		}
	}
}
