package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The import rules of the module, checked on `go list` (the graph the
// compiler sees) rather than stated in every package comment; the README's
// package map is checked against the same graph. The command's
// tests hold them because it is where the whole graph meets.

const module = "waitingroom"

// pkgInfo is one package of the module as go list reports it, imports
// limited to the module's own packages.
type pkgInfo struct {
	Path    string   // "queue/history", without the module
	Imports []string // of the package's non-test files
}

// importRule is one rule: a package matching from may not import, in its
// non-test files, a package matching to, unless allowed says it may.
type importRule struct {
	name     string
	from, to func(string) bool
	allowed  func(from, to string) bool
	explain  func(from, to string) string // optional: what the report adds to the rule's name
}

func under(prefixes ...string) func(string) bool {
	return func(p string) bool {
		for _, pre := range prefixes {
			if p == pre || strings.HasPrefix(p, pre+"/") {
				return true
			}
		}
		return false
	}
}

func not(f func(string) bool) func(string) bool { return func(p string) bool { return !f(p) } }

// testHelpers are packages for tests only: the real Redis and Postgres of
// the tests, the system tests' harness, the load tool's server under test
// and fake room.
var testHelpers = []string{"queue/queuetest", "server/pgstore/pgtest", "cmd/waitingroom/systemtest", "loadtest/internal/smoke", "loadtest/internal/fakeroom"}

// serverFloors are server's packages by floor, top down. A package imports
// only packages on a floor below its own, and of its own floor only the
// pairs floorSiblings names, each with its reason. Every package of server
// (but a test helper) is on one floor; internal, queue, stream and web are
// below them all.
var serverFloors = []struct {
	name, what string
	pkgs       []string
}{
	{"top", "the composition of the two apps", []string{"server"}},
	{"adapters", "the handlers and middleware of the apps, on Fiber and fasthttp", []string{
		"server/admin", "server/client", "server/crosssite", "server/page", "server/protocol",
		"server/push", "server/ratelimit/httplimit", "server/roominfo"}},
	{"edge", "the contract's form the adapters share: errors, JSON decoding, Fiber's configuration, the OpenAPI documents", []string{
		"server/api", "server/openapi"}},
	{"policy", "the use cases and the instance's shared state, which know nothing of HTTP's contract", []string{
		"server/access", "server/accesslog", "server/admin/audit", "server/checkout", "server/faults",
		"server/gateway", "server/login", "server/metrics", "server/pow", "server/queuestatus", "server/readiness"}},
	{"data", "stores, tokens, limiters, logs, sockets, the origin's client: what policy is made of", []string{
		"server/gateway/origin", "server/listener", "server/pass", "server/pass/passcheck", "server/pgstore",
		"server/ratelimit", "server/ratelimit/local", "server/seclog", "server/token"}},
}

// floorSiblings are the imports within a floor, each with its reason.
var floorSiblings = map[[2]string]string{
	{"server/crosssite", "server/client"}:          "the gate asks the resolver the handlers ask who the client is and whether it came over HTTPS",
	{"server/ratelimit/local", "server/ratelimit"}: "the in-memory limiter answers in ratelimit's Limit and Result, so that a caller reads both alike",
}

// standAlone are the packages of server that import nothing of the module,
// each by a rule of its own; of the floors, only who may import them
// applies to them.
var standAlone = under("server/api", "server/openapi", "server/gateway/origin", "server/pass/passcheck")

// floorOf is the index of p's floor in serverFloors (0 the top), -1 for none.
func floorOf(p string) int {
	for i, f := range serverFloors {
		if slices.Contains(f.pkgs, p) {
			return i
		}
	}
	return -1
}

func serverPkg(p string) bool { return under("server")(p) && !slices.Contains(testHelpers, p) }

func floorAllows(from, to string) bool {
	f, t := floorOf(from), floorOf(to)
	return f >= 0 && t >= 0 && (t > f || t == f && floorSiblings[[2]string{from, to}] != "")
}

// floorNames says an import's floors: "policy → policy".
func floorNames(from, to string) string {
	name := func(p string) string {
		if i := floorOf(p); i >= 0 {
			return serverFloors[i].name
		}
		return "no floor"
	}
	return name(from) + " → " + name(to)
}

// importRules, from the bottom of the graph up.
var importRules = []importRule{
	{name: "internal holds generic helpers under every layer: it imports nothing of the module outside internal",
		from: under("internal"), to: not(under("internal"))},
	{name: "queue is the bottom layer: it imports only queue's own packages and internal's helpers",
		from: under("queue"), to: not(under("queue", "internal"))},
	{name: "stream builds on queue alone",
		from: under("stream"), to: not(under("queue", "stream", "internal"))},
	{name: "web embeds files and imports nothing of the project",
		from: under("web"), to: func(string) bool { return true }},
	{name: "nothing outside cmd imports the composition root",
		from: func(string) bool { return true }, to: under("cmd"),
		allowed: func(from, _ string) bool { return under("cmd")(from) }}, // the command and its system tests
	{name: "nothing outside the load tool imports it",
		from: not(under("loadtest")), to: under("loadtest")},
	{name: "server's floors: a package of server imports only packages on a lower floor (serverFloors)",
		from: func(p string) bool { return serverPkg(p) && !standAlone(p) }, to: serverPkg,
		allowed: floorAllows, explain: floorNames},
	// api is the contract's form alone: the table from the domain's errors
	// to it is package server's (errors.go), where every domain package is
	// visible; so not even queue's errors are api's.
	{name: "the HTTP edge (api, openapi) imports nothing of the module: the domain's errors are mapped to the contract above it",
		from: under("server/api", "server/openapi"), to: func(string) bool { return true }},
	{name: "the gateway's client to an origin stands alone (the standard library and fasthttp): the policy is the gateway's",
		from: under("server/gateway/origin"), to: func(string) bool { return true }},
	{name: "an origin's pass check stands alone (the standard library and golang-jwt)",
		from: under("server/pass/passcheck"), to: func(string) bool { return true }},
	{name: "the load tool drives the server over HTTP: of server it uses only client-side pieces",
		from: under("loadtest"), to: under("server", "cmd"),
		allowed: func(from, to string) bool {
			return slices.Contains([]string{"server/pass/passcheck", "server/pow", "server/ratelimit"}, to) ||
				slices.Contains(testHelpers, from) // the smoke tests' server seeds its database
		}},
	{name: "test helpers are imported by tests only",
		from: func(string) bool { return true }, to: func(p string) bool { return slices.Contains(testHelpers, p) },
		allowed: func(from, _ string) bool { return slices.Contains(testHelpers, from) }},
}

// checkImports returns every broken rule, one line each.
func checkImports(pkgs []pkgInfo) []string {
	var out []string
	for _, p := range pkgs {
		for _, imp := range p.Imports {
			for _, r := range importRules {
				if r.from(p.Path) && r.to(imp) && imp != p.Path && (r.allowed == nil || !r.allowed(p.Path, imp)) {
					line := fmt.Sprintf("%s imports %s: %s", p.Path, imp, r.name)
					if r.explain != nil {
						line += ": " + r.explain(p.Path, imp)
					}
					out = append(out, line)
				}
			}
		}
		if serverPkg(p.Path) && floorOf(p.Path) < 0 {
			out = append(out, p.Path+" is on none of server's floors: add it to serverFloors")
		}
	}
	return out
}

// modulePackages lists the module's packages with go list.
func modulePackages(t *testing.T) []pkgInfo {
	t.Helper()
	gobin := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		gobin = "go"
	}
	cmd := exec.Command(gobin, "list", "-json", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	own := func(list []string) []string {
		var r []string
		for _, p := range list {
			if rel, ok := strings.CutPrefix(p, module+"/"); ok {
				r = append(r, rel)
			}
		}
		slices.Sort(r)
		return slices.Compact(r)
	}
	var pkgs []pkgInfo
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, pkgInfo{Path: strings.TrimPrefix(p.ImportPath, module+"/"), Imports: own(p.Imports)})
	}
	return pkgs
}

// TestImportRules: the module's graph keeps every rule.
func TestImportRules(t *testing.T) {
	pkgs := modulePackages(t)
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	for _, v := range checkImports(pkgs) {
		t.Error(v)
	}
	for _, f := range serverFloors {
		for _, p := range f.pkgs {
			if !slices.ContainsFunc(pkgs, func(q pkgInfo) bool { return q.Path == p }) {
				t.Errorf("serverFloors names %s, which go list does not know", p)
			}
		}
	}
	for pair := range floorSiblings {
		if floorOf(pair[0]) != floorOf(pair[1]) || floorOf(pair[0]) < 0 {
			t.Errorf("floorSiblings names %s → %s, not two packages of one floor", pair[0], pair[1])
		}
		if !slices.ContainsFunc(pkgs, func(q pkgInfo) bool { return q.Path == pair[0] && slices.Contains(q.Imports, pair[1]) }) {
			t.Errorf("floorSiblings names %s → %s, which go list does not find: drop it", pair[0], pair[1])
		}
	}
}

// TestImportRulesCatchBreaks: each rule reports a graph that breaks it,
// and a graph that keeps them all reports nothing.
func TestImportRulesCatchBreaks(t *testing.T) {
	good := []pkgInfo{
		{Path: "internal/loop"},
		{Path: "internal/batch"},
		{Path: "queue", Imports: []string{"internal/batch", "internal/loop", "queue/estimate"}},
		{Path: "stream", Imports: []string{"internal/loop", "queue", "queue/estimate"}},
		{Path: "server", Imports: []string{"queue", "server/admin", "server/api", "server/crosssite", "server/gateway", "server/token", "stream", "web"}},
		{Path: "server/admin", Imports: []string{"queue", "server/api", "server/gateway", "server/openapi"}},
		{Path: "server/crosssite", Imports: []string{"server/api", "server/client"}},
		{Path: "server/client", Imports: []string{"server/access", "server/api", "server/listener"}},
		{Path: "server/api"},
		{Path: "server/gateway", Imports: []string{"queue", "server/gateway/origin", "server/ratelimit/local", "server/token"}},
		{Path: "server/ratelimit/local", Imports: []string{"server/ratelimit"}},
		{Path: "cmd/waitingroom", Imports: []string{"cmd/waitingroom/compose"}},
		{Path: "cmd/waitingroom/compose", Imports: []string{"server"}},
		{Path: "cmd/waitingroom/systemtest", Imports: []string{"cmd/waitingroom/compose", "queue/queuetest", "server/pgstore/pgtest"}},
		{Path: "loadtest/surge", Imports: []string{"loadtest/internal/client", "server/pow", "stream/sseclient"}},
		{Path: "queue/queuetest", Imports: []string{"queue"}},
		{Path: "server/pgstore/pgtest"},
	}
	if v := checkImports(good); len(v) > 0 {
		t.Fatalf("a graph that keeps the rules: %q", v)
	}
	for _, bad := range []struct{ from, to, rule string }{
		{"internal/loop", "queue", "internal holds generic helpers"},
		{"internal/batch", "server/ratelimit", "internal holds generic helpers"},
		{"queue/history", "stream", "queue is the bottom layer"},
		{"stream", "server/token", "stream builds on queue alone"},
		{"web", "queue", "web embeds files"},
		{"server", "cmd/waitingroom/compose", "nothing outside cmd imports the composition root"},
		{"cmd/waitingroom/compose", "cmd/waitingroom/systemtest", "test helpers are imported by tests only"},
		{"server/admin", "loadtest/internal/client", "nothing outside the load tool"},
		{"server/gateway", "server", "server's floors"},          // up to the top
		{"server/gateway", "server/checkout", "server's floors"}, // policy sideways
		{"server/gateway", "server/api", "server's floors"},      // policy up to the edge
		{"server/admin", "server/push", "server's floors"},       // adapters sideways
		{"server/pgstore", "server/login", "server's floors"},    // data up to policy
		{"server/token", "server/pass", "server's floors"},       // data sideways
		{"server/api", "server/pgstore", "the HTTP edge"},
		{"server/openapi", "queue", "the HTTP edge"},
		{"server/newpkg", "", "on none of server's floors"},
		{"server/pass/passcheck", "server/pass", "an origin's pass check stands alone"},
		{"server/gateway/origin", "server/listener", "the gateway's client to an origin stands alone"},
		{"server/gateway/origin", "queue", "the gateway's client to an origin stands alone"},
		{"loadtest/surge", "server/checkout", "the load tool drives the server over HTTP"},
		{"server/pgstore", "server/pgstore/pgtest", "test helpers are imported by tests only"},
	} {
		p := pkgInfo{Path: bad.from}
		if bad.to != "" {
			p.Imports = []string{bad.to}
		}
		v := checkImports(append(slices.Clone(good), p))
		if len(v) != 1 || !strings.Contains(v[0], bad.rule) {
			t.Errorf("%s importing %s: reported %q, want one report of %q", bad.from, bad.to, v, bad.rule)
		}
	}
}

// TestReadmePackageMap: the README's package map has a row for every
// package, or a row for a parent that names it in backquotes (the load
// tool's row names its scenarios, and `loadtest/internal/…`); and where a row's imports column is a list of packages
// (or "—" for none), it is what go list gives for the row's package and
// the ones it covers, less those.
func TestReadmePackageMap(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := readmePackageRows(t, string(raw))
	pkgs := modulePackages(t)
	covers := map[string][]pkgInfo{} // row → its package and those it covers
	for _, p := range pkgs {
		if _, ok := rows[p.Path]; ok {
			covers[p.Path] = append(covers[p.Path], p)
			continue
		}
		row := ""
		for name, r := range rows {
			last := p.Path[strings.LastIndex(p.Path, "/")+1:]
			rel := strings.TrimPrefix(p.Path, name+"/")
			named := slices.ContainsFunc(backticked.FindAllStringSubmatch(r.owns, -1), func(m []string) bool {
				return m[1] == last || m[1] == rel || m[1] == p.Path
			}) || strings.HasPrefix(rel, "internal/") && strings.Contains(r.owns, "`"+name+"/internal/…`")
			if strings.HasPrefix(p.Path, name+"/") && len(name) > len(row) && named {
				row = name
			}
		}
		if row == "" {
			t.Errorf("README's package map has no row for %s (nor a row of a parent naming it)", p.Path)
			continue
		}
		covers[row] = append(covers[row], p)
	}
	for name, row := range rows {
		group := covers[name]
		if len(group) == 0 {
			t.Errorf("README's package map has a row for %s, which go list does not know", name)
			continue
		}
		if row.imports == nil {
			continue // told in words
		}
		var got []string
		for _, p := range group {
			if slices.Contains(testHelpers, p.Path) && p.Path != name {
				continue // a covered test helper's imports are the tests'
			}
			for _, imp := range p.Imports {
				if !slices.ContainsFunc(group, func(q pkgInfo) bool { return q.Path == imp }) {
					got = append(got, imp)
				}
			}
		}
		slices.Sort(got)
		got = slices.Compact(got)
		if !slices.Equal(row.imports, got) {
			t.Errorf("README says %s imports %q; go list says %q", name, row.imports, got)
		}
	}
}

type readmeRow struct {
	owns    string
	imports []string // nil: the column is prose; empty: "—"
}

var backticked = regexp.MustCompile("`([^`]+)`")

// readmePackageRows parses the table under "## Packages".
func readmePackageRows(t *testing.T, readme string) map[string]readmeRow {
	t.Helper()
	_, section, ok := strings.Cut(readme, "\n## Packages\n")
	if !ok {
		t.Fatal(`README.md has no "## Packages" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	rows := map[string]readmeRow{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 3 || !strings.HasPrefix(cells[0], "`") {
			continue
		}
		name := strings.Trim(cells[0], "`")
		row := readmeRow{owns: cells[1]}
		switch imp := strings.TrimSpace(cells[2]); {
		case strings.HasPrefix(imp, "—"):
			row.imports = []string{}
		case strings.HasPrefix(imp, "`") && strings.Trim(backticked.ReplaceAllString(imp, ""), ", ") == "":
			row.imports = []string{}
			for _, m := range backticked.FindAllStringSubmatch(imp, -1) {
				row.imports = append(row.imports, m[1])
			}
			slices.Sort(row.imports)
		}
		rows[name] = row
	}
	if len(rows) < 20 {
		t.Fatalf("README's package map: %d rows parsed", len(rows))
	}
	return rows
}
