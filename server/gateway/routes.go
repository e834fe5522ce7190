package gateway

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"waitingroom/queue"
)

// Route is one kind of protected request: a method ("*": any) and a path
// pattern, queued by Room. A pattern is an exact path ("/api/orders") or a
// prefix ending in "/*" ("/checkout/*" matches "/checkout" and everything
// below it; "/*" matches every path). A GET route also covers HEAD.
// Patterns and requests' paths are compared in canonical form (Match):
// "/API/Orders/", "/api/orders;x=1" and "/api/orders.json" are all
// "/api/orders".
type Route struct {
	Method  string
	Pattern string
	Room    string
}

// String is the route as ParseRoutes reads it: "GET /checkout/*=sale".
func (r Route) String() string { return r.Method + " " + r.Pattern + "=" + r.Room }

// methods a route may name: the methods the public port accepts at all.
var methods = map[string]bool{"*": true, "GET": true, "HEAD": true, "POST": true, "PUT": true,
	"DELETE": true, "PATCH": true, "OPTIONS": true, "CONNECT": true, "TRACE": true}

// ParseRoutes reads the configured routes' form, comma-separated
// "METHOD /pattern=room". An empty string is no route. Errors say which
// entry is wrong and why.
func ParseRoutes(s string) ([]Route, error) {
	var out []Route
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		i := strings.LastIndexByte(entry, '=') // a room name holds no "="
		if i < 0 {
			return nil, fmt.Errorf("%q: want METHOD /path=room", entry)
		}
		r, err := ParseRoute(strings.TrimSpace(entry[:i]), strings.TrimSpace(entry[i+1:]))
		if err != nil {
			return nil, fmt.Errorf("%q: %w", entry, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// ParseRoute checks one route: spec is "METHOD /pattern".
func ParseRoute(spec, room string) (Route, error) {
	method, pattern, ok := strings.Cut(strings.TrimSpace(spec), " ")
	pattern = strings.TrimSpace(pattern)
	switch {
	case !ok || pattern == "":
		return Route{}, errors.New("want METHOD /path")
	case !methods[method]:
		return Route{}, fmt.Errorf("unknown method %q (upper case, or * for any)", method)
	case !queue.ValidRoom(room):
		return Route{}, errors.New("the room name must be 1-64 of a-z 0-9 - _")
	}
	if err := checkPattern(pattern); err != nil {
		return Route{}, err
	}
	return Route{Method: method, Pattern: pattern, Room: room}, nil
}

// reservedPrefix is the gateway's own part of every site: the waiting
// room's page and API. No route may protect it.
const reservedPrefix = "/_wr"

func checkPattern(p string) error {
	switch {
	case !strings.HasPrefix(p, "/"):
		return errors.New("the path must start with /")
	case strings.ContainsAny(p, "?# \t"):
		return errors.New("the path must not hold a query, a fragment or spaces")
	case strings.ContainsAny(p, ";\\"):
		return errors.New("the path must not hold ; or \\ (requests are matched without ;params, a \\ read as /)")
	case !validEscapes(p):
		return errors.New("the path holds a malformed percent-escape")
	case strings.Contains(strings.TrimSuffix(p, "/*"), "*"):
		return errors.New("* is allowed only as a final /*")
	case strings.Contains(p, "//") || strings.Contains(p, "/./") || strings.Contains(p, "/../") ||
		strings.HasSuffix(p, "/..") || strings.HasSuffix(p, "/."):
		return errors.New("the path must be normalized (no //, . or .. segments)")
	case p == reservedPrefix || strings.HasPrefix(p, reservedPrefix+"/"):
		return errors.New("the path " + reservedPrefix + "/ is the waiting room's own")
	}
	return nil
}

// Table is a set of routes, matched most specific first: an exact pattern
// before any prefix, a longer prefix before a shorter one, a named method
// before "*". It is immutable.
type Table struct {
	routes []Route
	canon  [][]string // each route's pattern in its canonical forms (patternForms)
}

// NewTable orders routes for matching.
func NewTable(routes []Route) *Table {
	t := &Table{routes: append([]Route(nil), routes...)}
	slices.SortStableFunc(t.routes, func(a, b Route) int {
		return cmp.Or(
			cmp.Compare(exactness(b), exactness(a)),
			cmp.Compare(len(canonicalPattern(b.Pattern)), len(canonicalPattern(a.Pattern))),
			cmp.Compare(named(b), named(a)),
		)
	})
	for _, r := range t.routes {
		t.canon = append(t.canon, patternForms(r.Pattern))
	}
	return t
}

func exactness(r Route) int {
	if strings.HasSuffix(r.Pattern, "/*") {
		return 0
	}
	return 1
}

func named(r Route) int {
	if r.Method == "*" {
		return 0
	}
	return 1
}

// Match returns the room that queues a request, if a route covers it.
// path is the request's path as the origin receives it, raw as the client
// sent it (RequestPaths; in forward auth both are the original request's
// path as the proxy sent it, which the origin receives unchanged). The request is judged on every reading an origin could make of
// either (readings.go): an error wraps ErrInvalidPath (no origin reads it
// one way) or ErrAmbiguous (readings disagree about its protection, or
// it holds what only an attack holds), whatever the routes.
func (t *Table) Match(method, path, raw string) (room string, ok bool, err error) {
	r, ok, err := t.Find(method, path, raw)
	return r.Room, ok, err
}

// Find returns the route that covers a request, if one does, read as
// Match reads it.
func (t *Table) Find(method, path, raw string) (Route, bool, error) {
	j := judgement{t: t, method: method, route: -1}
	if err := j.read(raw); err != nil {
		return Route{}, false, err
	}
	if path != raw {
		if err := j.read(path); err != nil {
			return Route{}, false, err
		}
	}
	return j.verdict()
}

// lookup returns the index of the first route that covers a canonical
// path, or -1.
func (t *Table) lookup(method, canon string) int {
	for i, r := range t.routes {
		if !methodCovers(r.Method, method) {
			continue
		}
		for _, form := range t.canon[i] {
			if patternCovers(form, canon) {
				return i
			}
		}
	}
	return -1
}

// Routes returns the table's routes, in matching order.
func (t *Table) Routes() []Route { return append([]Route(nil), t.routes...) }

// methodCovers reports whether a route's method covers a request's: "*"
// any, GET also HEAD (every framework answers HEAD with the GET handler).
// Case is ignored, though the public port refuses a method not in upper
// case before any route is matched.
func methodCovers(route, method string) bool {
	return route == "*" || method == AnyMethod || strings.EqualFold(route, method) || (route == "GET" && strings.EqualFold(method, "HEAD"))
}

// AnyMethod, as the method given to Match, is covered by every route's
// method: a request the origin may route as another method than its own
// (routedMethod). No request has it: the public port refuses it.
const AnyMethod = "*"

// patternCovers reports whether a canonical pattern covers a canonical
// path, or the path without a format suffix on its last segment: each
// ".ext" from any dot on ("/api/orders.json" and "/api/orders.v1.json" are
// "/api/orders" to a router with optional formats).
func patternCovers(pattern, path string) bool {
	prefix, wild := strings.CutSuffix(pattern, "/*")
	covers := func(p string) bool {
		if !wild {
			return p == prefix
		}
		return prefix == "" || p == prefix || strings.HasPrefix(p, prefix+"/")
	}
	if covers(path) {
		return true
	}
	last := strings.LastIndexByte(path, '/') + 1
	for i := last + 1; i < len(path); i++ {
		if path[i] == '.' && covers(path[:i]) {
			return true
		}
	}
	return false
}

// canonicalPattern is a route pattern's canonical form: canonical of its
// decoded path, a final "/*" kept ("/*" stays "/*").
func canonicalPattern(pattern string) string {
	return canonicalForm(unescapeAll(pattern))
}

// canonicalForm is canonical of a decoded pattern, a final "/*" kept.
func canonicalForm(decoded string) string {
	prefix, wild := strings.CutSuffix(decoded, "/*")
	c := canonical(prefix, true)
	if !wild {
		return c
	}
	return strings.TrimSuffix(c, "/") + "/*"
}

// patternForms are the canonical forms a request's reading is compared
// with: the decoded pattern, and the pattern as a request spells it before
// any decoding — percent-encoded as a browser encodes a path, and as
// RFC 3986 encodes every byte outside a path segment's characters (the
// public port's own re-encoding). A reading that is never decoded
// ("/caf%C3%A9") is then compared with the route as such an origin has it
// written, so that a request for a route with characters that are sent
// escaped reads alike before and after decoding. Duplicates are dropped:
// most patterns have one form.
func patternForms(pattern string) []string {
	decoded := unescapeAll(pattern)
	forms := []string{canonicalForm(decoded)}
	for _, esc := range []func(byte) bool{browserEscapes, pcharEscapes} {
		if f := canonicalForm(escapePath(decoded, esc)); !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	return forms
}

// escapePath percent-encodes the bytes of p that esc names.
func escapePath(p string, esc func(byte) bool) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if c := p[i]; esc(c) {
			b.WriteByte('%')
			b.WriteByte("0123456789ABCDEF"[c>>4])
			b.WriteByte("0123456789ABCDEF"[c&15])
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// browserEscapes: the bytes a browser percent-encodes in a path (the
// path percent-encode set, and "%" itself).
func browserEscapes(c byte) bool {
	return c <= ' ' || c >= 0x7f || strings.IndexByte("\"#<>?`{}%", c) >= 0
}

// pcharEscapes: the bytes outside RFC 3986's path characters (unreserved,
// sub-delims, ":", "@") and "/".
func pcharEscapes(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return false
	}
	return strings.IndexByte("-._~!$&'()*+,;=:@/", c) < 0
}
