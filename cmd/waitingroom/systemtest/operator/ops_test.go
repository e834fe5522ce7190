package operator

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	"waitingroom/cmd/waitingroom/systemtest"
)

// Operations: the request id on every response and in the log lines of
// its request.

// freshID is the form of an id the server made itself (128 bits, base64url).
var freshID = regexp.MustCompile(`^[A-Za-z0-9_-]{22}$`)

// requestID is the X-Request-Id of a response; the test fails when there
// is none.
func requestID(t testing.TB, what string, h http.Header) string {
	t.Helper()
	ids := h.Values("X-Request-Id")
	if len(ids) != 1 || ids[0] == "" {
		t.Fatalf("%s: X-Request-Id %q, want exactly one", what, ids)
	}
	return ids[0]
}

// rawExchange writes req as it is on a new connection to base and reads
// the response.
func rawExchange(t testing.TB, base, req string) *http.Response {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", req, err)
	}
	res.Body.Close()
	return res
}

// TestRequestIDOnEveryResponse: every answer of both ports — successes,
// refusals of the handlers, of the protocol filter and of the HTTP parser,
// unknown paths, the page, a stream's and a WebSocket's — carries an id of
// its own, and a client's own X-Request-Id is not taken.
func TestRequestIDOnEveryResponse(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(nil)
	qt := in.Enter(systemtest.User(1), "default").Str("queueToken")
	spoof := []string{"X-Request-Id", "chosen-by-the-client"}
	seen := map[string]string{}
	check := func(what string, h http.Header) {
		t.Helper()
		id := requestID(t, what, h)
		if !freshID.MatchString(id) {
			t.Errorf("%s: X-Request-Id %q is not one the server made", what, id)
		}
		if prev, dup := seen[id]; dup {
			t.Errorf("%s: X-Request-Id %q already given to %s", what, id, prev)
		}
		seen[id] = what
	}
	for _, c := range []struct {
		what, method, url, bearer string
		body                      any
		want                      int
		headers                   []string
	}{
		{"room info", "GET", in.Base + "/api/v1/rooms/default", "", nil, 200, spoof},
		{"position", "GET", in.Base + "/api/v1/rooms/default/position", qt, nil, 200, nil},
		{"no token", "POST", in.Base + "/api/v1/rooms/default/enter", "", nil, 401, spoof},
		{"unknown path", "GET", in.Base + "/nowhere", "", nil, 404, nil},
		{"the page", "GET", in.Base + "/rooms/default", "", nil, 200, nil},
		{"compressed body", "POST", in.Base + "/api/v1/auth/login", "", `{}`, 415, []string{"Content-Encoding", "gzip"}},
		{"lowercase method", "get", in.Base + "/api/v1/rooms/default", "", nil, 400, nil},
		{"health", "GET", in.Admin + "/healthz", "", nil, 200, spoof},
		{"metrics", "GET", in.Admin + "/metrics", "", nil, 200, nil},
		{"admin without token", "GET", in.Admin + "/admin/rooms", "", nil, 401, nil},
		{"admin", "GET", in.Admin + "/admin/rooms", systemtest.TestAdminToken, nil, 200, nil},
		{"admin unknown path", "GET", in.Admin + "/nowhere", "", nil, 404, nil},
	} {
		r := systemtest.Do(t, c.method, c.url, c.bearer, c.body, c.headers...)
		if r.Status != c.want {
			t.Fatalf("%s: %d %s, want %d", c.what, r.Status, r.Raw, c.want)
		}
		check(c.what, r.Header)
	}
	// The parser's own refusal (two Content-Lengths): no handler ran.
	for _, base := range []string{in.Base, in.Admin} {
		res := rawExchange(t, base, "POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n{}")
		if res.StatusCode != 400 {
			t.Fatalf("duplicate Content-Length: %d, want 400", res.StatusCode)
		}
		check("parser refusal at "+base, res.Header)
	}
	// A stream's response and a WebSocket handshake.
	req, _ := http.NewRequest("GET", in.Base+"/api/v1/rooms/default/events", nil)
	req.Header.Set("Authorization", "Bearer "+qt)
	res, err := systemtest.Client.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("events: %v %v", res, err)
	}
	res.Body.Close()
	check("SSE stream", res.Header)
	ws, wres, err := websocket.DefaultDialer.Dial(strings.Replace(in.Base, "http://", "ws://", 1)+"/api/v1/rooms/default/ws?token="+qt, nil)
	if err != nil {
		t.Fatalf("ws: %v", err)
	}
	ws.Close()
	check("WebSocket handshake", wres.Header)
}

// TestRequestIDInTheLog: the log lines of a request carry its id — a
// security event of the public port and of the management port — and
// lines outside any request carry none.
func TestRequestIDInTheLog(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(nil)
	r := systemtest.Do(t, "POST", in.Base+"/api/v1/auth/login", "", map[string]string{"loginId": systemtest.User(2), "password": "wrong"})
	if r.Status != 401 {
		t.Fatalf("wrong password: %d %s", r.Status, r.Raw)
	}
	id := requestID(t, "failed login", r.Header)
	if in.LogLine("event=login_failed", "request_id="+id) == "" {
		t.Errorf("no login_failed line with request_id=%s in\n%s", id, in.Logs)
	}
	r = systemtest.Do(t, "GET", in.Admin+"/admin/rooms", "not-the-token", nil)
	id = requestID(t, "admin auth failure", r.Header)
	if in.LogLine("event=admin_auth_failed", "request_id="+id) == "" {
		t.Errorf("no admin_auth_failed line with request_id=%s in\n%s", id, in.Logs)
	}
	if line := in.LogLine("msg=serving"); line == "" || strings.Contains(line, "request_id=") {
		t.Errorf("the serving line %q: want one, without a request id", line)
	}
}

// TestRequestIDFromATrustedProxy: behind a trusted proxy its X-Request-Id
// is kept — in the response and in the log — when it is fit; an unfit one
// (too long, spaces, other characters) is replaced by a fresh id and the
// request served all the same.
func TestRequestIDFromATrustedProxy(t *testing.T) {
	e := systemtest.NewEnv(t)
	in := e.Start(systemtest.BehindProxy(map[string]string{}))
	longest := strings.Repeat("a", 128)
	for _, id := range []string{"edge-7f3a9c:1", "0b6f1c2e-4a8d-4d1b-9a57-3c2f9e1d8b40", "Root=1-5759e988/bd862e3f@x+y", longest} {
		for _, url := range []string{in.Base + "/api/v1/rooms/default", in.Admin + "/healthz"} {
			r := systemtest.Do(t, "GET", url, "", nil, "X-Request-Id", id)
			if got := requestID(t, url, r.Header); r.Status != 200 || got != id {
				t.Errorf("GET %s with %q: %d, X-Request-Id %q", url, id, r.Status, got)
			}
		}
	}
	for _, id := range []string{longest + "b", "two words", "é-accent", "semi;colon", `"quoted"`} {
		r := systemtest.Do(t, "GET", in.Base+"/api/v1/rooms/default", "", nil, "X-Request-Id", id)
		if got := requestID(t, id, r.Header); r.Status != 200 || !freshID.MatchString(got) {
			t.Errorf("unfit id %q: %d, X-Request-Id %q, want 200 with a fresh id", id, r.Status, got)
		}
	}
	r := systemtest.Do(t, "POST", in.Base+"/api/v1/auth/login", "", map[string]string{"loginId": systemtest.User(3), "password": "wrong"},
		"X-Request-Id", "edge-42")
	if got := requestID(t, "login", r.Header); got != "edge-42" {
		t.Fatalf("X-Request-Id %q, want edge-42", got)
	}
	if in.LogLine("event=login_failed", "request_id=edge-42") == "" {
		t.Errorf("no login_failed line with the proxy's id in\n%s", in.Logs)
	}
}

// TestRequestIDReachesTheOrigin: in gateway mode the origin is sent the id
// the visitor gets back, never the visitor's own.
func TestRequestIDReachesTheOrigin(t *testing.T) {
	o := systemtest.StartOrigin(t)
	in := systemtest.GatewayInstance(t, o, nil)
	code, h, _ := systemtest.Call(t, systemtest.Visitor(t), "GET", in.Base+"/catalog", "", "X-Request-Id", "chosen-by-the-visitor")
	if code != 200 {
		t.Fatalf("GET /catalog: %d", code)
	}
	id := requestID(t, "forwarded", h)
	if got := o.Last.Load().Header.Get("X-Request-Id"); got != id || !freshID.MatchString(id) {
		t.Errorf("the origin was sent X-Request-Id %q; the visitor got %q", got, id)
	}
	code, h, _ = systemtest.Call(t, systemtest.Visitor(t), "GET", in.Base+"/_wr/api/v1/rooms/sale", "")
	if code != 200 || !freshID.MatchString(requestID(t, "own API", h)) {
		t.Errorf("GET /_wr/api/v1/rooms/sale: %d %v", code, h)
	}
}

// Alert rules (deploy/prometheus) and the Grafana dashboard
// (deploy/grafana): checked by promtool, and every metric they name must
// exist in a live instance's /metrics.

const (
	alertsDir     = "../../../../deploy/prometheus"
	dashboardFile = "../../../../deploy/grafana/waitingroom.json"
)

// promtool is the path of Debian's promtool (package prometheus; make test
// installs it as root). Its absence fails the test: the rules would go
// unchecked.
func promtool(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no promtool")
	}
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is missing: apt-get install -y prometheus (make test installs it when run as root)")
	}
	return p
}

// TestAlertRulesPromtool: promtool accepts the rules and their unit tests
// on synthetic series pass.
func TestAlertRulesPromtool(t *testing.T) {
	bin := promtool(t)
	for _, args := range [][]string{{"check", "rules", "alerts.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = alertsDir
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SUCCESS") {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// alertRules reads the rules' names and expressions from alerts.yaml.
func alertRules(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(alertsDir, "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	rules := map[string]string{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Annotations["runbook"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("alert %s: want a summary and a runbook annotation", r.Alert)
			}
			rules[r.Alert] = r.Expr
		}
	}
	return rules
}

// TestAlertRulesCoverTheIssue: the alerts an operator of a waiting room
// is paged for are all there.
func TestAlertRulesCoverTheIssue(t *testing.T) {
	rules := alertRules(t)
	for _, name := range []string{"WaitingroomRedisUnreachable", "WaitingroomAdmissionStalled", "WaitingroomPoolAcquireWaitHigh",
		"WaitingroomOrderErrorRate", "WaitingroomStreamsDropped", "WaitingroomConnectionCeilingNear",
		"WaitingroomRateLimitingSurge", "WaitingroomInstanceNotReady", "WaitingroomETAErrorHigh",
		"WaitingroomOriginErrors", "WaitingroomOriginSlow", "WaitingroomTunnelsAtCap"} {
		if rules[name] == "" {
			t.Errorf("alert %s is missing", name)
		}
	}
}

// TestAlertRulesUseLiveMetrics: every metric a rule names is served by a
// running instance.
func TestAlertRulesUseLiveMetrics(t *testing.T) {
	known := liveMetricNames(t)
	for name, expr := range alertRules(t) {
		names := metricNames(expr)
		if len(names) == 0 {
			t.Errorf("alert %s: no metric found in %q", name, expr)
		}
		for _, m := range names {
			if !known[m] {
				t.Errorf("alert %s uses %s, which the server does not export", name, m)
			}
		}
	}
}

// liveMetricNames starts an instance, lets its loops run and serves a
// little traffic, then returns every series name its /metrics can hold,
// with those of an instance in gateway mode that forwarded a request.
func liveMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	e := systemtest.NewEnv(t)
	in := e.Start(map[string]string{"WR_ADMIT_INTERVAL": "50ms"})
	qt := in.Enter(systemtest.User(1), "default").Str("queueToken")
	in.Position("default", qt)
	// The readiness loop's gauges say both dependencies answer; the
	// admission run's say the room is not paused.
	systemtest.WaitFor(t, "an admission run and a readiness check", func() bool {
		text := systemtest.Scrape(t, in)
		return strings.Contains(text, `waitingroom_dependency_up{dependency="redis"} 1`) &&
			strings.Contains(text, `waitingroom_dependency_up{dependency="postgres"} 1`) &&
			strings.Contains(text, `waitingroom_room_paused{room="default"} 0`)
	})
	names := map[string]bool{}
	seriesNames(t, in, names)
	if !names["waitingroom_queue_waiting"] || !names["process_open_fds"] {
		t.Fatalf("the live /metrics lacks the basics: %v", names)
	}
	gw := systemtest.GatewayInstance(t, systemtest.StartOrigin(t), nil)
	if code, _, _ := systemtest.Call(t, systemtest.Visitor(t), "GET", gw.Base+"/big", ""); code != 200 {
		t.Fatalf("an unprotected request through the gateway: %d", code)
	}
	seriesNames(t, gw, names)
	if !names["waitingroom_gateway_upstream_seconds_bucket"] || !names["waitingroom_gateway_tunnels_refused_total"] {
		t.Fatalf("the gateway's /metrics lacks its own series: %v", names)
	}
	return names
}

// seriesNames adds to names every series name in's /metrics can hold:
// each sample's name and, for a histogram, its _bucket, _sum and _count
// (from the live text), plus the families registered but without a
// sample yet (a vector no label value has been used with: read from the
// registry's descriptions, as they are not in the text).
func seriesNames(t *testing.T, in *systemtest.Instance, names map[string]bool) {
	t.Helper()
	for line := range strings.Lines(systemtest.Scrape(t, in)) {
		line = strings.TrimSpace(line)
		if typ, ok := strings.CutPrefix(line, "# TYPE "); ok {
			f := strings.Fields(typ)
			if len(f) == 2 && (f[1] == "histogram" || f[1] == "summary") {
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					names[f[0]+s] = true
				}
			}
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		names[strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]] = true
	}
	ch := make(chan *prometheus.Desc)
	go func() {
		in.Parts.Metrics.Registry.Describe(ch)
		close(ch)
	}()
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range ch {
		if m := fq.FindStringSubmatch(d.String()); m != nil {
			names[m[1]] = true
		}
	}
}

// metricNames are the metric names a PromQL expression selects (also one
// of a dashboard, whose $variables it ignores): every identifier that is
// not a function, an aggregation, a keyword, a label name or a number.
func metricNames(expr string) []string {
	for _, cut := range []*regexp.Regexp{
		regexp.MustCompile(`"(\\.|[^"\\])*"`),   // strings
		regexp.MustCompile(`\{[^{}]*\}`),        // label matchers
		regexp.MustCompile(`\[[^\]]*\]`),        // ranges
		regexp.MustCompile(`\$\{[^}]*\}|\$\w+`), // dashboard variables
		regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`),
		regexp.MustCompile(`\b[0-9][0-9a-zA-Z.]*`), // numbers and durations (offset 5m)
	} {
		expr = cut.ReplaceAllString(expr, " ")
	}
	keywords := map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true, "inf": true, "nan": true}
	var out []string
	for _, m := range regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`).FindAllString(expr, -1) {
		if strings.HasSuffix(m, "(") || keywords[strings.ToLower(m)] {
			continue
		}
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

func TestMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`max(waitingroom_dependency_up{dependency="redis"}) == 0`:                                             {"waitingroom_dependency_up"},
		`max by (room) (a_b) > 0 unless on (room) (sum by (room) (increase(c_total[10m])) > 0)`:               {"a_b", "c_total"},
		`histogram_quantile(0.9, sum by (le) (rate(x_bucket{room=~"$room"}[$__rate_interval])))`:              {"x_bucket"},
		`process_open_fds / process_max_fds > 0.8 or sum without (reason) (y)`:                                {"process_open_fds", "process_max_fds", "y"},
		`sum(rate(o_total{result="un}available"}[5m])) / ignoring (result) group_left sum(o_total) offset 5m`: {"o_total"},
	} {
		if got := metricNames(expr); !slices.Equal(got, want) {
			t.Errorf("metricNames(%q) = %v, want %v", expr, got, want)
		}
	}
}

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	Title         string `json:"title"`
	UID           string `json:"uid"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name       string         `json:"name"`
			Type       string         `json:"type"`
			Query      any            `json:"query"`
			Definition string         `json:"definition"`
			Datasource map[string]any `json:"datasource"`
			Multi      bool           `json:"multi"`
			IncludeAll bool           `json:"includeAll"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID         int            `json:"id"`
		Type       string         `json:"type"`
		Title      string         `json:"title"`
		Datasource map[string]any `json:"datasource"`
		GridPos    struct{ H, W, X, Y int }
		Targets    []struct {
			Expr       string         `json:"expr"`
			RefID      string         `json:"refId"`
			Datasource map[string]any `json:"datasource"`
		} `json:"targets"`
	} `json:"panels"`
}

// perRoom are the families labelled by room: a dashboard query of them
// must follow the room variable.
var perRoom = regexp.MustCompile(`\b(waitingroom_(queue_waiting|active|admission_limit|admitted_total|entered_total|entry_expired_total|abandoned_total|room_paused|adaptive_[a-z0-9_]+|eta_[a-z_]+))\b(\{[^}]*\})?`)

// TestGrafanaDashboard: the dashboard is an importable Grafana dashboard
// — a datasource variable, a room variable, the panels the issue asks
// for — whose every query names metrics a live instance exports, and
// whose per-room queries follow the room variable.
func TestGrafanaDashboard(t *testing.T) {
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s is not valid JSON: %v", dashboardFile, err)
	}
	if d.Title == "" || d.UID == "" || d.SchemaVersion < 30 {
		t.Errorf("title %q, uid %q, schemaVersion %d: want a titled dashboard with a uid and a current schema", d.Title, d.UID, d.SchemaVersion)
	}
	var exprs []string
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name+":"+v.Type] = true
		if v.Type == "datasource" && v.Query != "prometheus" {
			t.Errorf("datasource variable %s queries %v, want prometheus", v.Name, v.Query)
		}
		if v.Name == "room" {
			// label_values(metric, room): the metric is the expression.
			m := regexp.MustCompile(`^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*), *room\)$`).FindStringSubmatch(v.Definition)
			if m == nil || !v.Multi || !v.IncludeAll || v.Datasource["uid"] != "${datasource}" {
				t.Fatalf("room variable: %+v, want label_values(metric, room) over ${datasource}, multi, with All", v)
			}
			exprs = append(exprs, m[1])
		}
	}
	if !vars["datasource:datasource"] || !vars["room:query"] {
		t.Errorf("variables %v, want datasource (datasource) and room (query)", vars)
	}
	ids := map[int]bool{}
	var titles []string
	queried := map[string][]string{} // panel title -> the metrics it queries
	for _, p := range d.Panels {
		if ids[p.ID] || p.ID == 0 {
			t.Errorf("panel %q: id %d is zero or taken", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		titles = append(titles, p.Title)
		if p.Datasource["uid"] != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %v, %d queries: want ${datasource} and queries", p.Title, p.Datasource, len(p.Targets))
		}
		for _, q := range p.Targets {
			if q.Datasource["uid"] != "${datasource}" || q.RefID == "" || q.Expr == "" {
				t.Errorf("panel %q: query %+v", p.Title, q)
			}
			for _, m := range perRoom.FindAllStringSubmatch(q.Expr, -1) {
				if !strings.Contains(m[3], `room=~"$room"`) {
					t.Errorf("panel %q: %s does not follow the room variable", p.Title, m[0])
				}
			}
			exprs = append(exprs, q.Expr)
			queried[p.Title] = append(queried[p.Title], metricNames(q.Expr)...)
		}
	}
	for _, want := range []string{"Waiting", "Active vs limit", "Admitted per second", "ETA at the back of the queue",
		"Order latency", "Pool wait and hold", "Streams by transport", "Fan-out lag", "429s by limit", "5xx by route",
		"Origin errors", "Origin latency", "502 and 504", "WebSocket tunnels open", "WebSocket upgrades and refusals"} {
		if !slices.Contains(titles, want) {
			t.Errorf("no panel %q among %q", want, titles)
		}
	}
	// The panels an operator reads first rest on the series made for them:
	// the ETA on the server's own estimate (not waiting ÷ a rate), the
	// origin's health on the gateway's series.
	for title, want := range map[string][]string{
		"ETA at the back of the queue":    {"waitingroom_eta_last_in_line_seconds"},
		"Origin errors":                   {"waitingroom_gateway_origin_responses_total", "waitingroom_gateway_requests_total"},
		"Origin latency":                  {"waitingroom_gateway_upstream_seconds_bucket"},
		"502 and 504":                     {"waitingroom_gateway_requests_total", "waitingroom_gateway_origin_responses_total"},
		"WebSocket tunnels open":          {"waitingroom_gateway_tunnels"},
		"WebSocket upgrades and refusals": {"waitingroom_gateway_requests_total", "waitingroom_gateway_tunnels_refused_total"},
	} {
		for _, m := range want {
			if !slices.Contains(queried[title], m) {
				t.Errorf("panel %q queries %v, want %s among them", title, queried[title], m)
			}
		}
	}
	if eta := queried["ETA at the back of the queue"]; slices.Contains(eta, "waitingroom_admitted_total") {
		t.Errorf("the ETA panel divides by the admission rate (%v): want the server's estimate", eta)
	}
	known := liveMetricNames(t)
	for _, expr := range exprs {
		names := metricNames(expr)
		if len(names) == 0 {
			t.Errorf("no metric in %q", expr)
		}
		for _, m := range names {
			if !known[m] {
				t.Errorf("the dashboard queries %s, which the server does not export (%s)", m, expr)
			}
		}
	}
}
