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
type Route struct {
	Method  string
	Pattern string
	Room    string
}

// String is the route as WR_PROTECT writes it: "GET /checkout/*=sale".
func (r Route) String() string { return r.Method + " " + r.Pattern + "=" + r.Room }

// methods a route may name: the methods the public port accepts at all.
var methods = map[string]bool{"*": true, "GET": true, "HEAD": true, "POST": true, "PUT": true,
	"DELETE": true, "PATCH": true, "OPTIONS": true, "CONNECT": true, "TRACE": true}

// ParseRoutes reads WR_PROTECT's form: comma-separated "METHOD /pattern=room".
// An empty string is no route. Errors say which entry is wrong and why.
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

// matches reports whether the route covers a request.
func (r Route) matches(method, path string) bool {
	if r.Method != "*" && r.Method != method && !(r.Method == "GET" && method == "HEAD") {
		return false
	}
	prefix, wild := strings.CutSuffix(r.Pattern, "/*")
	if !wild {
		return path == r.Pattern
	}
	return path == prefix || strings.HasPrefix(path, prefix+"/") || prefix == ""
}

// Table is a set of routes, matched most specific first: an exact pattern
// before any prefix, a longer prefix before a shorter one, a named method
// before "*". It is immutable.
type Table struct{ routes []Route }

// NewTable orders routes for matching.
func NewTable(routes []Route) *Table {
	t := &Table{routes: append([]Route(nil), routes...)}
	slices.SortStableFunc(t.routes, func(a, b Route) int {
		return cmp.Or(
			cmp.Compare(exactness(b), exactness(a)),
			cmp.Compare(len(b.Pattern), len(a.Pattern)),
			cmp.Compare(named(b), named(a)),
		)
	})
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
func (t *Table) Match(method, path string) (room string, ok bool) {
	r, ok := t.Find(method, path)
	return r.Room, ok
}

// Find returns the route that covers a request, if one does.
func (t *Table) Find(method, path string) (Route, bool) {
	for _, r := range t.routes {
		if r.matches(method, path) {
			return r, true
		}
	}
	return Route{}, false
}

// Routes returns the table's routes, in matching order.
func (t *Table) Routes() []Route { return append([]Route(nil), t.routes...) }
