package fuzzroutes

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Case is one request, sent byte for byte (Wire): a method, a
// request-target, extra header lines and a body. It never carries a pass.
type Case struct {
	Method string `json:"method"`
	// Target is the request-target as sent; with Absolute it is the path
	// of an absolute-form target whose scheme and authority are the front
	// door's (Scheme + host + Target).
	Target   string   `json:"target"`
	Absolute bool     `json:"absolute,omitempty"`
	Scheme   string   `json:"scheme,omitempty"` // "http://" unless set
	Header   []string `json:"header,omitempty"` // "Name: value" lines
	Body     string   `json:"body,omitempty"`
	// Note says how the case was made, for the report.
	Note string `json:"note,omitempty"`
}

// caseHeader carries a case's id to the origin's record; front doors
// forward it as any other header.
const caseHeader = "Fuzz-Case"

// Wire is the request's bytes for a front door at host, with the case id:
// the request line, Host, the id, the case's header lines, Content-Length
// (always, 0 for no body) and the body.
func (c Case) Wire(host, id string) []byte {
	var b strings.Builder
	b.WriteString(c.Method)
	b.WriteByte(' ')
	if c.Absolute {
		scheme := c.Scheme
		if scheme == "" {
			scheme = "http://"
		}
		b.WriteString(scheme + host)
	}
	b.WriteString(c.Target)
	b.WriteString(" HTTP/1.1\r\nHost: " + host + "\r\n" + caseHeader + ": " + id + "\r\n")
	for _, h := range c.Header {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("Content-Length: " + strconv.Itoa(len(c.Body)) + "\r\n\r\n")
	b.WriteString(c.Body)
	return []byte(b.String())
}

// Generate is case i of the campaign of seed: the same pair (seed, i)
// always gives the same case.
func Generate(seed uint64, i int) Case {
	r := rand.New(rand.NewPCG(seed, uint64(i)))
	g := gen{r: r}
	return g.next()
}

type gen struct {
	r     *rand.Rand
	notes []string
}

func (g *gen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }
func (g *gen) chance(p float64) bool    { return g.r.Float64() < p }
func (g *gen) note(f string, a ...any)  { g.notes = append(g.notes, fmt.Sprintf(f, a...)) }

// Protected routes' spellings the mutations start from: WR_PROTECT's
// GET /checkout/* and POST /api/orders.
var (
	checkoutBases = []string{"/checkout", "/checkout/", "/checkout/pay", "/checkout/a/b.css"}
	ordersBase    = "/api/orders"
)

func (g *gen) next() Case {
	var c Case
	orders := g.chance(0.3)
	if orders {
		c.Target = ordersBase
	} else {
		c.Target = g.pick(checkoutBases...)
	}
	for range g.r.IntN(4) { // 0..3 mutations: 0 is the plain route, a control
		c.Target = g.mutate(c.Target)
	}
	switch {
	case g.chance(0.04):
		c.Absolute, c.Scheme = true, g.pick("http://", "HTTP://", "http://")
		g.note("absolute-form")
	case g.chance(0.05):
		c.Target = g.pick("/public#/..", "/x/..#", "#", "/public/..#/") + c.Target
		g.note("# before")
	}
	g.method(&c, orders)
	c.Note = strings.Join(g.notes, ", ")
	return c
}

// method sets the method and any override: a checkout case asks for GET,
// an orders case for POST, in the ways frameworks read an override.
func (g *gen) method(c *Case, orders bool) {
	want, other := "GET", g.pick("POST", "PUT")
	if orders {
		want, other = "POST", g.pick("GET", "PUT")
	}
	switch g.r.IntN(10) {
	case 0, 1, 2:
		c.Method = want
	case 3:
		if orders {
			c.Method = "POST"
		} else {
			c.Method = "HEAD"
		}
	default:
		c.Method = other
		if want == "GET" && c.Method == "PUT" && g.chance(0.5) {
			c.Method = "POST"
		}
		g.override(c, want)
	}
}

// override asks for method want in one of the ways a framework reads it.
func (g *gen) override(c *Case, want string) {
	w := want
	if g.chance(0.15) {
		w = strings.ToLower(want)
	}
	form := g.pick("_method="+w, "_method="+w+"&x=1", "x=1&_method="+w, "_method=%"+strconv.FormatInt(int64(w[0]), 16)+w[1:])
	switch k := g.r.IntN(9); k {
	case 0, 1:
		ct := g.pick("application/x-www-form-urlencoded", "application/x-www-form-urlencoded, text/plain",
			"Application/X-WWW-Form-URLEncoded", "application/x-www-form-urlencoded;charset=UTF-8",
			"application/x-www-form-urlencoded;", " application/x-www-form-urlencoded", "text/plain",
			"application/x-www-form-urlencoded ; charset=utf-8", "text/plain, application/x-www-form-urlencoded",
			"application/x-www-form-urlencoded;a=\"b,c\"", "application/octet-stream")
		c.Header = append(c.Header, "Content-Type: "+ct)
		c.Body = form
		g.note("form %q as %q", form, ct)
	case 2:
		c.Body = form
		g.note("form %q without Content-Type", form)
	case 3:
		ct := g.pick("application/json", "application/vnd.api+json", "text/plain", "application/json; charset=utf-8", "")
		if ct != "" {
			c.Header = append(c.Header, "Content-Type: "+ct)
		}
		c.Body = `{"_method":"` + w + `"}`
		g.note("JSON _method as %q", ct)
	case 4:
		c.Header = append(c.Header, "Content-Type: multipart/form-data; boundary=zz")
		c.Body = "--zz\r\nContent-Disposition: form-data; name=\"_method\"\r\n\r\n" + w + "\r\n--zz--\r\n"
		g.note("multipart _method")
	case 5:
		sep := "?"
		if strings.Contains(c.Target, "?") {
			sep = "&"
		}
		c.Target += sep + "_method=" + w
		g.note("query _method")
	default:
		h := g.pick("X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override", "x-http-method-override")
		c.Header = append(c.Header, h+": "+w)
		g.note("%s header", h)
	}
}

// specials are the characters whose encoding matters to a router.
const specials = `/.\%?#;`

// mutate applies one mutation to a target.
func (g *gen) mutate(t string) string {
	switch g.r.IntN(13) {
	case 0, 1: // percent-encode a character, 1..3 rounds
		return g.encodeChar(t)
	case 2: // a dot segment somewhere
		return g.dotSegment(t)
	case 3: // a trailing dot segment (the protected prefix, then up)
		tail := g.pick("/..", "%2f..", "/%2e%2e", "/%252e%252e", "\\..", "%5c..", "/../", "/.", "/..%2f", "/..;/x", "%2f%2e%2e", "/%2E%2E/x/..")
		g.note("trailing %q", tail)
		return strings.TrimSuffix(t, "/") + tail
	case 4: // a separator
		return g.separator(t)
	case 5: // case
		return g.changeCase(t)
	case 6: // unicode look-alikes, raw or encoded
		return g.lookalikeIn(t)
	case 7: // ;params
		i := g.slash(t)
		p := g.pick(";", ";x=1", ";jsessionid=1", ";/", "%3b", ";.json")
		g.note("params %q", p)
		return t[:i] + p + t[i:]
	case 8: // a format suffix
		s := g.pick(".json", ".JSON", ".html", ".", "..", ".json/", ".v1.json")
		g.note("suffix %q", s)
		return strings.TrimSuffix(t, "/") + s
	case 9: // trailing dots and spaces
		s := g.pick(".", "%20", " ", "%09", "%2e", "/", "%00", "%20.", "./")
		g.note("trailing %q", s)
		return t + s
	case 10: // a query or fragment
		s := g.pick("?x=1", "?", "#x", "#", "?#", "%3f", "%23", "%3f/..", "?/../x")
		g.note("then %q", s)
		return t + s
	case 11: // a special character anywhere
		return g.insertSpecial(t)
	default: // a prefix that leads elsewhere, then back
		p := g.pick("/x/..", "/public/%2e%2e", "//", "/.", "/public%2f..", "/%2e%2e", "/..", "/public/..%2f..")
		g.note("prefix %q", p)
		return p + t
	}
}

// encodeChar percent-encodes a character of t, 1..3 rounds, or leaves t
// as it is when the draw passes the character over.
func (g *gen) encodeChar(t string) string {
	i := g.pos(t)
	if strings.ContainsRune(specials, rune(t[i])) || g.chance(0.3) {
		d := 1 + g.r.IntN(3)
		g.note("encode %q ×%d", t[i], d)
		return t[:i] + encode(t[i], d, g.chance(0.5)) + t[i+1:]
	}
	return t
}

// dotSegment inserts a dot segment into t at a slash.
func (g *gen) dotSegment(t string) string {
	dot := g.pick(".", "..", "...", ".. ", "%2e", "%2e%2e", ".%2e", "%2E.", "%252e%252e", "..;", "..%20", "%2e%2e%2f", "..%5c", "%c0%ae%c0%ae")
	i := g.slash(t)
	seg := "/" + dot
	if strings.Contains(dot, "..") || strings.Contains(strings.ToLower(dot), "2e%2e") || strings.Contains(dot, "%c0") {
		if g.chance(0.5) {
			seg = "/" + g.pick("x", "public", "checkout", "api") + seg
		}
	}
	g.note("dot segment %q", seg)
	return t[:i] + seg + t[i:]
}

// separator replaces a slash of t with another separator.
func (g *gen) separator(t string) string {
	i := g.slash(t)
	if i == 0 || i >= len(t) {
		return t
	}
	sep := g.pick("//", `\`, "%2f", "%2F", "%5c", "%5C", "%252f", "/./", "///", `/\`)
	g.note("separator %q", sep)
	return t[:i] + sep + t[i+1:]
}

// changeCase upper-cases t, or swaps the case of one of its characters.
func (g *gen) changeCase(t string) string {
	if g.chance(0.5) {
		g.note("upper case")
		return strings.ToUpper(t)
	}
	i := g.pos(t)
	g.note("case of %q", t[i])
	return t[:i] + swapCase(t[i:i+1]) + t[i+1:]
}

// lookalikeIn replaces a part of t with a unicode look-alike, raw or
// encoded.
func (g *gen) lookalikeIn(t string) string {
	from, to := g.lookalike()
	i := strings.Index(t, from)
	if i < 0 {
		return t
	}
	if g.chance(0.5) {
		to = encodeAll(to)
	}
	g.note("look-alike %q for %q", to, from)
	return t[:i] + to + t[i+len(from):]
}

// insertSpecial inserts a special character, raw or encoded, anywhere in
// t.
func (g *gen) insertSpecial(t string) string {
	i := g.pos(t)
	ch := specials[g.r.IntN(len(specials))]
	s := string(ch)
	if d := g.r.IntN(4); d > 0 {
		s = encode(ch, d, g.chance(0.5))
	}
	g.note("insert %q", s)
	return t[:i] + s + t[i:]
}

// pos is a random index of t past the first byte (t is never empty).
func (g *gen) pos(t string) int {
	if len(t) < 2 {
		return 0
	}
	return 1 + g.r.IntN(len(t)-1)
}

// slash is the index of a random "/" of t, or len(t).
func (g *gen) slash(t string) int {
	var at []int
	for i := range len(t) {
		if t[i] == '/' {
			at = append(at, i)
		}
	}
	at = append(at, len(t))
	return at[g.r.IntN(len(at))]
}

// lookalike is an ASCII substring of the routes and a spelling that
// looks like it or folds to it: fullwidth forms, ſ (folds to s), the
// Kelvin sign (folds to k), overlong UTF-8.
func (g *gen) lookalike() (string, string) {
	pairs := [][2]string{
		{".", "．"}, {"/", "／"}, {"/", "＼"}, {"s", "ſ"}, {"k", "\u212a"}, {"c", "ｃ"}, {"o", "ｏ"},
		{"/", "\xc0\xaf"}, {".", "\xc0\xae"}, {"/", "\xe0\x80\xaf"}, {"checkout", "ｃｈｅｃｋｏｕｔ"}, {"K", "\u212a"},
	}
	p := pairs[g.r.IntN(len(pairs))]
	return p[0], p[1]
}

// encode is c percent-encoded d times ("%" itself encoded each further
// round: "." 2 times is "%252e"), hex in lower or upper case.
func encode(c byte, d int, upper bool) string {
	s := string(c)
	for range d {
		var b strings.Builder
		for j := 0; j < len(s); j++ {
			if j == 0 || s[j] == '%' {
				b.WriteString(hexByte(s[j], upper))
				continue
			}
			b.WriteByte(s[j])
		}
		s = b.String()
	}
	return s
}

// encodeAll is s with every byte percent-encoded.
func encodeAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteString(hexByte(s[i], false))
	}
	return b.String()
}

func hexByte(c byte, upper bool) string {
	if upper {
		return fmt.Sprintf("%%%02X", c)
	}
	return fmt.Sprintf("%%%02x", c)
}

func swapCase(s string) string {
	if u := strings.ToUpper(s); u != s {
		return u
	}
	return strings.ToLower(s)
}
