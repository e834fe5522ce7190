package gateway

import (
	"errors"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// How the judge reads a request's path: it fails closed.
//
// The origin routes a request on its own reading of the path, and origins
// do not read alike: one routes the escaped path as it came, another
// decodes it once, a third twice (a framework behind a proxy that
// decoded already); one takes "\" for "/", one folds case, one drops
// ;params, one cuts at a "?" or "#" that decoding revealed, one applies
// Unicode compatibility forms. A judge that settles on one reading loses
// to the origin that takes another. So the judge makes every reading
// (readRound says which) and:
//
//   - passes the request unprotected only when no reading is protected;
//   - judges it protected when every reading is protected by one room;
//   - refuses it, 400 ambiguous_request (ErrAmbiguous), when the readings
//     disagree — one protected, another not, or two rooms — and whatever
//     the routes when a reading holds a dot segment ("." or "..", also
//     encoded, after a ;param, with trailing spaces, "\" for "/"): origins
//     disagree on whether and when to resolve one, browsers never send
//     one, and a reading that resolves it may name any path at all;
//   - refuses it, 400 invalid_request (ErrInvalidPath), when no origin
//     reads it one way: a malformed escape, bytes that are not UTF-8 once
//     decoded, a control character.
//
// docs/security.md ("The judge fails closed") has the table of readings.

// ErrInvalidPath is a request path that origins do not all read one way:
// a malformed percent-escape, bytes that are not UTF-8 once decoded
// (overlong forms included) or a control character (NUL included). Such a
// request is refused with 400 invalid_request whatever the routes.
// Match's error is one; its text says which, for the visitor.
var ErrInvalidPath = errors.New("invalid request path")

// ErrAmbiguous is a request whose readings disagree about its protection,
// or that holds a dot segment or more rounds of escapes than maxRounds:
// 400 ambiguous_request, never passed.
var ErrAmbiguous = errors.New("ambiguous request")

type pathError struct {
	msg       string
	ambiguous bool
}

func (e pathError) Error() string { return e.msg }
func (e pathError) Is(target error) bool {
	if e.ambiguous {
		return target == ErrAmbiguous
	}
	return target == ErrInvalidPath
}

func invalid(msg string) error   { return pathError{msg: msg} }
func ambiguous(msg string) error { return pathError{msg: msg, ambiguous: true} }

// maxRounds is how many rounds of percent-decoding are read; a path that a
// further round would still change is refused (no request a browser makes
// is escaped even twice over).
const maxRounds = 3

// judgement collects what the readings of one request say.
type judgement struct {
	t      *Table
	method string
	route  int  // the first protected reading's route; -1: none yet
	open   bool // some reading is unprotected
	split  bool // protected readings name different rooms
}

// read judges every reading of one spelling of the path (see readRound),
// round by round of percent-decoding.
func (j *judgement) read(p string) error {
	if !validEscapes(p) {
		return invalid("the request path holds a malformed percent-escape (% must be followed by two hex digits)")
	}
	for round := 0; ; round++ {
		if err := j.readRound(p, round); err != nil {
			return err
		}
		if strings.IndexByte(p, '%') < 0 {
			return nil
		}
		next := unescape(p)
		if next == p {
			return nil
		}
		if round == maxRounds {
			return ambiguous("the request path is percent-encoded more than three times over")
		}
		p = next
	}
}

// readRound judges the readings of p, the path decoded round times: p
// itself; once decoded, p cut at the first "?" or "#" (a second decoder
// takes them for the query or fragment); each cut at its first ";"
// (Fastify ends the path there, where Tomcat drops each segment's
// ;params); the compatibility form (NFKC) of each that is not ASCII ("／" is "/", "．" is "."). Each is matched in
// canonical form with "\" read as "/" and, when it holds a "\", with "\"
// kept as a character.
func (j *judgement) readRound(p string, round int) error {
	if !utf8.ValidString(p) {
		return invalid("the request path is not UTF-8 once percent-decoded")
	}
	if strings.ContainsFunc(p, isControl) {
		return invalid("the request path holds a control character")
	}
	forms, n := [6]string{p}, 1
	if round > 0 {
		if i := strings.IndexAny(p, "?#"); i >= 0 {
			forms[n] = p[:i]
			n++
		}
	}
	for k := range n {
		if i := strings.IndexByte(forms[k], ';'); i >= 0 {
			forms[n] = forms[k][:i]
			n++
		}
	}
	for k := range n {
		if !isASCII(forms[k]) {
			if f := norm.NFKC.String(forms[k]); f != forms[k] {
				forms[n] = f
				n++
			}
		}
	}
	for _, f := range forms[:n] {
		if hasDotSegment(f) {
			return ambiguous("the request path holds a dot segment (. or .., spelled or percent-encoded), which origins resolve differently")
		}
		j.add(j.t.lookup(j.method, canonical(f, true)))
		if strings.IndexByte(f, '\\') >= 0 {
			j.add(j.t.lookup(j.method, canonical(f, false)))
		}
	}
	return nil
}

// add records one reading's route (-1: unprotected).
func (j *judgement) add(i int) {
	switch {
	case i < 0:
		j.open = true
	case j.route < 0:
		j.route = i
	case j.t.routes[i].Room != j.t.routes[j.route].Room:
		j.split = true
	}
}

// verdict is the judgement of every reading: unprotected when none is
// protected, the first protected reading's route when all are protected
// by one room, else ErrAmbiguous.
func (j *judgement) verdict() (Route, bool, error) {
	switch {
	case j.route < 0:
		return Route{}, false, nil
	case j.split:
		return Route{}, false, ambiguous("the request path reads as routes of two rooms, depending on how an origin decodes it")
	case j.open:
		return Route{}, false, ambiguous("the request path is protected read one way and not another (decoded once more, or with \\ as /): send it as a browser would")
	}
	return j.t.routes[j.route], true, nil
}

// hasDotSegment reports whether a segment of p ("/" or "\" separated)
// is a dot segment to some origin: once its ";params" are dropped, only
// dots and spaces, at least one dot ("..", ". ", "..;x", "...": Windows
// paths drop a segment's trailing dots and spaces).
func hasDotSegment(p string) bool {
	for p != "" {
		seg := p
		if i := strings.IndexAny(p, `/\`); i >= 0 {
			seg, p = p[:i], p[i+1:]
		} else {
			p = ""
		}
		seg, _, _ = strings.Cut(seg, ";")
		if strings.IndexByte(seg, '.') >= 0 && strings.Trim(seg, ". ") == "" {
			return true
		}
	}
	return false
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// canonical is a decoded path as the most lenient origin routes it
// (docs/gateway.md, "Which requests are protected", says why each step):
// with slash, a backslash is a slash (else a character of its segment);
// each segment loses its ";params" and its trailing spaces and dots;
// empty and "." segments are dropped and ".." removes the one before (a
// request holding one is refused before: this is for patterns); the
// result is case-folded, starts with "/" and has no trailing slash. The
// format suffix is patternCovers' part.
func canonical(p string, slash bool) string {
	if slash {
		p = strings.ReplaceAll(p, `\`, "/")
	}
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

// unescapeAll decodes a pattern's valid percent-escapes, again while a
// round leaves some (at most maxRounds rounds).
func unescapeAll(p string) string {
	for range maxRounds {
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
