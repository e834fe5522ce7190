package gateway

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

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
	canon  []string // each route's pattern in canonical form, a final "/*" kept
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
		t.canon = append(t.canon, canonicalPattern(r.Pattern))
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
// path is the request's path as fasthttp decoded and normalized it (the
// path the origin receives, ctx.Path()), raw the path as the client sent
// it (ctx.URI().PathOriginal()). Both are read in canonical form (see
// canonical); a path origins would not all read one way is an error
// wrapping ErrAmbiguousPath, whatever the routes.
func (t *Table) Match(method, path, raw string) (room string, ok bool, err error) {
	r, ok, err := t.Find(method, path, raw)
	return r.Room, ok, err
}

// Find returns the route that covers a request, if one does, read as
// Match reads it.
func (t *Table) Find(method, path, raw string) (Route, bool, error) {
	p, err := canonicalRequest(path, raw)
	if err != nil {
		return Route{}, false, err
	}
	for i, r := range t.routes {
		if methodCovers(r.Method, method) && patternCovers(t.canon[i], p) {
			return r, true, nil
		}
	}
	return Route{}, false, nil
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

// ErrAmbiguousPath is a request path that origins do not all read one
// way: a malformed percent-escape, bytes that are not UTF-8 once decoded
// (overlong forms included) or a control character (NUL included). Such a
// request is refused with 400 whatever the routes. Match's error is one;
// its text says which, for the visitor.
var ErrAmbiguousPath = errors.New("ambiguous request path")

type pathError string

func (e pathError) Error() string      { return string(e) }
func (pathError) Is(target error) bool { return target == ErrAmbiguousPath }

// canonicalRequest checks a request's path (fasthttp's decoded form and
// the raw one, see Match) and returns its canonical form.
func canonicalRequest(path, raw string) (string, error) {
	if !validEscapes(raw) {
		return "", pathError("the request path holds a malformed percent-escape (% must be followed by two hex digits)")
	}
	p := unescapeAll(path)
	if !utf8.ValidString(p) {
		return "", pathError("the request path is not UTF-8 once percent-decoded")
	}
	if strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", pathError("the request path holds a control character")
	}
	return canonical(p), nil
}

// canonical is a decoded path as the most lenient origin routes it
// (docs/gateway.md, "Which requests are protected", says why each step):
// a backslash is a slash; each segment loses its ";params" and its
// trailing spaces and dots; empty and "." segments are dropped and ".."
// removes the one before; the result is case-folded, starts with "/" and
// has no trailing slash. The format suffix is patternCovers' part.
func canonical(p string) string {
	p = strings.ReplaceAll(p, `\`, "/")
	// Upper then lower case: a letter that a case-insensitive router takes
	// for an ASCII one either way folds to it ("ſ" uppercases to "S", the
	// Kelvin sign lowercases to "k").
	p = strings.ToLower(strings.ToUpper(p))
	segs := make([]string, 0, strings.Count(p, "/")+1)
	for _, s := range strings.Split(p, "/") {
		s, _, _ = strings.Cut(s, ";")
		if s = strings.TrimRight(s, " "); s != "." && s != ".." {
			s = strings.TrimRight(s, ".")
		}
		switch s {
		case "", ".":
		case "..":
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
		default:
			segs = append(segs, s)
		}
	}
	return "/" + strings.Join(segs, "/")
}

// canonicalPattern is a route pattern's canonical form: canonical of its
// decoded path, a final "/*" kept ("/*" stays "/*").
func canonicalPattern(pattern string) string {
	prefix, wild := strings.CutSuffix(pattern, "/*")
	c := canonical(unescapeAll(prefix))
	if !wild {
		return c
	}
	return strings.TrimSuffix(c, "/") + "/*"
}

// unescapeAll decodes a path's valid percent-escapes, again while a round
// leaves some (at most three rounds): an origin that decodes twice must
// not see a protected path where the gateway saw another.
func unescapeAll(p string) string {
	for range 3 {
		if !strings.Contains(p, "%") {
			break
		}
		q := unescape(p)
		if q == p {
			break
		}
		p = q
	}
	return p
}

// unescape decodes p's valid percent-escapes and leaves any other "%".
func unescape(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && i+2 < len(p) && isHex(p[i+1]) && isHex(p[i+2]) {
			b.WriteByte(unhex(p[i+1])<<4 | unhex(p[i+2]))
			i += 2
			continue
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// validEscapes reports whether every "%" of p starts a percent-escape.
func validEscapes(p string) bool {
	for i := strings.IndexByte(p, '%'); i >= 0; i = strings.IndexByte(p, '%') {
		if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
			return false
		}
		p = p[i+3:]
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}
