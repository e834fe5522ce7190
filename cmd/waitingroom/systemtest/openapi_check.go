package systemtest

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The OpenAPI plumbing of operator/openapi_test.go: an OpenAPI 3.1 description
// loaded for checking requests and answers against it, with the JSON
// Schemas it holds compiled by JSON pointer into the document (so their
// $refs to #/components/schemas/... resolve).
//
// What is checked, and reported as a problem:
//   - the request: its path (under servers[0].url) matches a path
//     template, a literal segment winning over a {param} one, and the
//     path item has an operation for its method;
//   - the answer: its status is described (exactly, else as 4XX, else by
//     default); every required header is present and every described
//     header present matches its schema; when the response describes
//     content, the Content-Type is one of it and the body matches the
//     schema (JSON is decoded; a JSON body must not be empty; another
//     media type's body is checked as a string); when it describes none,
//     there is no body;
//   - for a request meant to be valid: every required parameter (path,
//     query, header, cookie) is present and each one present matches its
//     schema; one of the security requirements is met (a bearer
//     Authorization, an API key in its header, query or cookie); the body
//     is present when required, absent when none is described, of a
//     described Content-Type and matches its schema;
//   - the document itself against the OpenAPI Initiative's schema of
//     OpenAPI 3.1 documents, and each of its schemas against JSON Schema
//     2020-12 (the compiler validates every schema it compiles).
//
// Formats are asserted ("date-time" must be RFC 3339, and so on) — in
// the answers, the requests and the document check alike. The validator
// this replaces did not assert them (its default); the descriptions
// promise RFC 3339 times, so the answers are held to it.

// oasSchemaFile is the JSON Schema of OpenAPI 3.1 documents (see
// testdata/openapi/README.md for its origin), embedded as oasSchemaJSON:
// the packages of system tests that check answers run in folders of their
// own.
const oasSchemaFile = "testdata/openapi/oas-3.1-schema-2025-09-15.json"

//go:embed testdata/openapi/oas-3.1-schema-2025-09-15.json
var oasSchemaJSON []byte

// OpenAPI is one description, ready for checking (ParseOpenAPI).
type OpenAPI struct {
	doc     map[string]any // the document, as jsonschema.UnmarshalJSON reads it
	prefix  string         // the path of servers[0].url without its final "/"
	schemas map[string]*jsonschema.Schema
}

// newCompiler is a compiler of JSON Schema 2020-12 (OpenAPI 3.1's
// dialect) that asserts formats.
func newCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	return c
}

// ParseOpenAPI reads a description (JSON) and compiles every schema it
// holds; base names it in messages (any absolute URL).
func ParseOpenAPI(base string, body []byte) (*OpenAPI, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", base, err)
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: not a JSON object", base)
	}
	d := &OpenAPI{doc: doc, schemas: map[string]*jsonschema.Schema{}}
	if servers, _ := doc["servers"].([]any); len(servers) > 0 {
		s, _ := servers[0].(map[string]any)
		u, err := url.Parse(fmt.Sprint(s["url"]))
		if err != nil {
			return nil, fmt.Errorf("%s: servers[0].url: %v", base, err)
		}
		d.prefix = strings.TrimSuffix(u.Path, "/")
	}
	c := newCompiler()
	if err := c.AddResource(base, doc); err != nil {
		return nil, err
	}
	for _, ptr := range d.schemaPointers() {
		sch, err := c.Compile(base + "#" + url.PathEscape(ptr))
		if err != nil {
			return nil, fmt.Errorf("the schema at %s: %v", ptr, err)
		}
		d.schemas[ptr] = sch
	}
	return d, nil
}

// oasSchema is the compiled schema of OpenAPI 3.1 documents.
var oasSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(oasSchemaJSON))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", oasSchemaFile, err)
	}
	id, _ := v.(map[string]any)["$id"].(string)
	c := newCompiler()
	if err := c.AddResource(id, v); err != nil {
		return nil, err
	}
	return c.Compile(id)
})

// CheckDocument validates the description against the schema of OpenAPI
// 3.1 documents.
func (d *OpenAPI) CheckDocument() error {
	if v, _ := d.doc["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		return fmt.Errorf("openapi is %q, want 3.1.x", v)
	}
	sch, err := oasSchema()
	if err != nil {
		return err
	}
	return sch.Validate(d.doc)
}

// pointer joins tokens to a JSON pointer, escaping them.
func pointer(ptr string, tokens ...string) string {
	for _, t := range tokens {
		ptr += "/" + strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
	}
	return ptr
}

// at is the value at a JSON pointer into the document (nil if none).
func (d *OpenAPI) at(ptr string) any {
	var v any = d.doc
	if ptr == "" {
		return v
	}
	for _, t := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		t = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			v = x[t]
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// object is the object at ptr with its $refs (local ones: the
// descriptions are one file each) followed, and the pointer it is at; nil
// if there is none.
func (d *OpenAPI) object(ptr string) (map[string]any, string) {
	for range 16 {
		obj, _ := d.at(ptr).(map[string]any)
		ref, ok := obj["$ref"].(string)
		if !ok {
			return obj, ptr
		}
		frag, found := strings.CutPrefix(ref, "#")
		if !found {
			return nil, ptr
		}
		if ptr, ok = unescapeFragment(frag); !ok {
			return nil, ptr
		}
	}
	return nil, ptr
}

func unescapeFragment(frag string) (string, bool) {
	s, err := url.PathUnescape(frag)
	return s, err == nil
}

// keys are an object's keys, sorted.
func keys(v any) []string {
	m, _ := v.(map[string]any)
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// schemaPointers are the pointers of every schema the document holds: the
// components' schemas and the schema of every parameter, header and media
// type, in the components and under the paths.
func (d *OpenAPI) schemaPointers() []string {
	var ptrs []string
	withSchema := func(ptr string) {
		if obj, _ := d.at(ptr).(map[string]any); obj != nil && obj["schema"] != nil {
			ptrs = append(ptrs, pointer(ptr, "schema"))
		}
	}
	content := func(ptr string) {
		for _, mt := range keys(d.at(pointer(ptr, "content"))) {
			withSchema(pointer(ptr, "content", mt))
		}
	}
	response := func(ptr string) {
		for _, h := range keys(d.at(pointer(ptr, "headers"))) {
			withSchema(pointer(ptr, "headers", h))
		}
		content(ptr)
	}
	parameters := func(ptr string) {
		list, _ := d.at(pointer(ptr, "parameters")).([]any)
		for i := range list {
			withSchema(pointer(ptr, "parameters", strconv.Itoa(i)))
		}
	}
	for _, name := range keys(d.at("/components/schemas")) {
		ptrs = append(ptrs, pointer("/components/schemas", name))
	}
	for _, name := range keys(d.at("/components/parameters")) {
		withSchema(pointer("/components/parameters", name))
	}
	for _, name := range keys(d.at("/components/headers")) {
		withSchema(pointer("/components/headers", name))
	}
	for _, name := range keys(d.at("/components/requestBodies")) {
		content(pointer("/components/requestBodies", name))
	}
	for _, name := range keys(d.at("/components/responses")) {
		response(pointer("/components/responses", name))
	}
	for _, path := range keys(d.at("/paths")) {
		item := pointer("/paths", path)
		parameters(item)
		for _, m := range methods {
			op := pointer(item, m)
			if d.at(op) == nil {
				continue
			}
			parameters(op)
			content(pointer(op, "requestBody"))
			for _, code := range keys(d.at(pointer(op, "responses"))) {
				response(pointer(op, "responses", code))
			}
		}
	}
	return ptrs
}

// Route is an operation a request was matched to.
type Route struct {
	Template string            // the path template, as in the document
	item, op string            // the pointers of the path item and the operation
	Params   map[string]string // the path parameters, decoded
}

// segmentPattern is a path template's segment with {params} as a regexp,
// and the params' names in order.
func segmentPattern(seg string) (*regexp.Regexp, []string) {
	var re strings.Builder
	var names []string
	re.WriteString("^")
	for {
		before, rest, found := strings.Cut(seg, "{")
		name, after, closed := strings.Cut(rest, "}")
		if !found || !closed {
			break
		}
		re.WriteString(regexp.QuoteMeta(before) + "([^/]+)")
		names = append(names, name)
		seg = after
	}
	re.WriteString(regexp.QuoteMeta(seg) + "$")
	return regexp.MustCompile(re.String()), names
}

// matchTemplate matches an escaped path against a template; rank says,
// segment by segment, which are literal (1) and which templated (0).
func matchTemplate(template, path string) (params map[string]string, rank []int, ok bool) {
	tsegs, psegs := strings.Split(template, "/"), strings.Split(path, "/")
	if len(tsegs) != len(psegs) {
		return nil, nil, false
	}
	params = map[string]string{}
	for i, t := range tsegs {
		if !strings.Contains(t, "{") {
			if t != psegs[i] {
				return nil, nil, false
			}
			rank = append(rank, 1)
			continue
		}
		re, names := segmentPattern(t)
		m := re.FindStringSubmatch(psegs[i])
		if m == nil {
			return nil, nil, false
		}
		for j, name := range names {
			v, err := url.PathUnescape(m[j+1])
			if err != nil {
				return nil, nil, false
			}
			params[name] = v
		}
		rank = append(rank, 0)
	}
	return params, rank, true
}

// Route finds the operation for a request's method and escaped path.
func (d *OpenAPI) Route(method, path string) (*Route, error) {
	rest, ok := strings.CutPrefix(path, d.prefix)
	if !ok || !strings.HasPrefix(rest, "/") {
		return nil, fmt.Errorf("the path %s is not under the server URL %s/", path, d.prefix)
	}
	var best *Route
	var bestRank []int
	ambiguous := false
	for _, template := range keys(d.at("/paths")) {
		params, rank, ok := matchTemplate(template, rest)
		if !ok {
			continue
		}
		switch c := slices.Compare(rank, bestRank); {
		case best == nil || c > 0:
			_, item := d.object(pointer("/paths", template))
			best, bestRank, ambiguous = &Route{Template: template, item: item, Params: params}, rank, false
		case c == 0:
			ambiguous = true
		}
	}
	switch {
	case best == nil:
		return nil, fmt.Errorf("no path template matches %s", rest)
	case ambiguous:
		return nil, fmt.Errorf("more than one path template matches %s equally", rest)
	}
	m := strings.ToLower(method)
	if !slices.Contains(methods, m) || d.at(pointer(best.item, m)) == nil {
		return nil, fmt.Errorf("%s has no %s operation", best.Template, method)
	}
	best.op = pointer(best.item, m)
	return best, nil
}

// checkText validates a parameter's or header's value, which is text,
// against the schema at ptr: it is read as each type the schema allows
// (an integer, a number, a boolean) and as a string, and is valid when
// one reading is; the first reading's error is returned.
func (d *OpenAPI) checkText(ptr, value string) error {
	sch := d.schemas[ptr]
	if sch == nil {
		return fmt.Errorf("no schema compiled at %s", ptr)
	}
	schema, _ := d.object(ptr)
	var types []string
	switch t := schema["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			types = append(types, fmt.Sprint(x))
		}
	}
	var readings []any
	for _, t := range types {
		switch t {
		case "integer":
			if _, err := strconv.ParseInt(value, 10, 64); err == nil {
				readings = append(readings, json.Number(value))
			}
		case "number":
			if _, err := strconv.ParseFloat(value, 64); err == nil {
				readings = append(readings, json.Number(value))
			}
		case "boolean":
			if b, err := strconv.ParseBool(value); err == nil {
				readings = append(readings, b)
			}
		}
	}
	readings = append(readings, value) // and as a string, last
	var first error
	for _, r := range readings {
		err := sch.Validate(r)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err // the reading of the type the schema names first
		}
	}
	return first
}

// checkBody validates a body of the media type mt against the schema at
// ptr: JSON is decoded (and must not be empty), anything else is a string.
func (d *OpenAPI) checkBody(ptr, mt string, body []byte) error {
	sch := d.schemas[ptr]
	if sch == nil {
		if d.at(ptr) == nil {
			return nil // a media type without a schema: anything goes
		}
		return fmt.Errorf("no schema compiled at %s", ptr)
	}
	if mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		return sch.Validate(string(body))
	}
	if len(body) == 0 {
		return errors.New("empty")
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	return sch.Validate(v)
}

// mediaType finds the entry of the content object at ptr for a
// Content-Type: the exact media type (parameters and case aside), else
// type/*, else */*. It returns the entry's pointer and the media type.
func (d *OpenAPI) mediaType(ptr, contentType string) (string, string, error) {
	described := keys(d.at(ptr))
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", "", fmt.Errorf("Content-Type %q is not one of the described %v", contentType, described)
	}
	typ, _, _ := strings.Cut(mt, "/")
	found, foundRank := "", 0
	for _, k := range described {
		key, _, _ := strings.Cut(k, ";")
		rank := 0
		switch strings.ToLower(strings.TrimSpace(key)) {
		case mt:
			rank = 3
		case typ + "/*":
			rank = 2
		case "*/*":
			rank = 1
		}
		if rank > foundRank {
			found, foundRank = k, rank
		}
	}
	if found == "" {
		return "", "", fmt.Errorf("Content-Type %q is not one of the described %v", contentType, described)
	}
	return pointer(ptr, found), mt, nil
}

// parameter is a parameter of an operation, resolved.
type parameter struct {
	ptr string
	obj map[string]any
}

// parameters are the operation's parameters with its path item's (the
// operation's win over the path item's of the same name and place).
func (d *OpenAPI) parameters(r *Route) []parameter {
	var out []parameter
	seen := map[string]bool{}
	for _, base := range []string{r.op, r.item} {
		list, _ := d.at(pointer(base, "parameters")).([]any)
		for i := range list {
			obj, ptr := d.object(pointer(base, "parameters", strconv.Itoa(i)))
			if obj == nil {
				continue
			}
			name, in := fmt.Sprint(obj["name"]), fmt.Sprint(obj["in"])
			if in == "header" {
				name = http.CanonicalHeaderKey(name)
			}
			if seen[in+" "+name] {
				continue
			}
			seen[in+" "+name] = true
			out = append(out, parameter{ptr, obj})
		}
	}
	return out
}

// CheckRequest checks a request meant to be valid (with its body) and
// returns the problems found.
func (d *OpenAPI) CheckRequest(req *http.Request, body []byte) []string {
	r, err := d.Route(req.Method, req.URL.EscapedPath())
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, oneLine(format, args...)) }
	described := map[string]bool{}
	for _, p := range d.parameters(r) {
		name, in := fmt.Sprint(p.obj["name"]), fmt.Sprint(p.obj["in"])
		var values []string
		switch in {
		case "path":
			described[name] = true
			if v, ok := r.Params[name]; ok {
				values = []string{v}
			}
		case "query":
			values = req.URL.Query()[name]
		case "header":
			values = req.Header.Values(name)
		case "cookie":
			for _, c := range req.Cookies() {
				if c.Name == name {
					values = append(values, c.Value)
				}
			}
		}
		if len(values) == 0 {
			if p.obj["required"] == true {
				add("the required %s parameter %s is missing", in, name)
			}
			continue
		}
		if p.obj["schema"] == nil {
			add("the %s parameter %s has no schema (content is not supported here)", in, name)
			continue
		}
		for _, v := range values {
			if err := d.checkText(pointer(p.ptr, "schema"), v); err != nil {
				add("the %s parameter %s = %q: %v", in, name, v, err)
			}
		}
	}
	for name := range r.Params {
		if !described[name] {
			add("the path parameter {%s} of %s is not described", name, r.Template)
		}
	}
	if err := d.checkSecurity(req, r); err != nil {
		add("%v", err)
	}
	rb, rbPtr := d.object(pointer(r.op, "requestBody"))
	switch {
	case rb == nil:
		if len(body) > 0 {
			add("a body was sent, but the operation describes none")
		}
	case len(body) == 0:
		if rb["required"] == true {
			add("the required body is missing")
		}
	default:
		ptr, mt, err := d.mediaType(pointer(rbPtr, "content"), req.Header.Get("Content-Type"))
		if err != nil {
			add("the body's %v", err)
		} else if err := d.checkBody(pointer(ptr, "schema"), mt, body); err != nil {
			add("the body: %v", err)
		}
	}
	return problems
}

// checkSecurity fails unless one of the operation's security requirements
// (else the document's) is met: every scheme it names has its credential
// in the request. Whether the credential is good is the server's business.
func (d *OpenAPI) checkSecurity(req *http.Request, r *Route) error {
	reqs, ok := d.at(pointer(r.op, "security")).([]any)
	if !ok {
		reqs, _ = d.doc["security"].([]any)
	}
	if len(reqs) == 0 {
		return nil
	}
	var unmet []string
	for _, alt := range reqs {
		var missing []string
		for _, name := range keys(alt) {
			if err := d.credential(req, name); err != nil {
				missing = append(missing, err.Error())
			}
		}
		if len(missing) == 0 {
			return nil
		}
		unmet = append(unmet, strings.Join(missing, " and "))
	}
	return fmt.Errorf("no security requirement is met: %s", strings.Join(unmet, "; or "))
}

// credential fails when the request lacks the credential of the named
// security scheme.
func (d *OpenAPI) credential(req *http.Request, name string) error {
	s, _ := d.object(pointer("/components/securitySchemes", name))
	if s == nil {
		return fmt.Errorf("the security scheme %s is not in the components", name)
	}
	switch typ, in, key := s["type"], s["in"], fmt.Sprint(s["name"]); {
	case typ == "http":
		scheme := fmt.Sprint(s["scheme"])
		got := req.Header.Get("Authorization")
		if len(got) <= len(scheme)+1 || !strings.EqualFold(got[:len(scheme)+1], scheme+" ") {
			return fmt.Errorf("%s: no Authorization: %s credential", name, scheme)
		}
	case typ == "apiKey" && in == "header":
		if req.Header.Get(key) == "" {
			return fmt.Errorf("%s: no %s header", name, key)
		}
	case typ == "apiKey" && in == "query":
		if req.URL.Query().Get(key) == "" {
			return fmt.Errorf("%s: no %s in the query", name, key)
		}
	case typ == "apiKey" && in == "cookie":
		if c, err := req.Cookie(key); err != nil || c.Value == "" {
			return fmt.Errorf("%s: no %s cookie", name, key)
		}
	default:
		return fmt.Errorf("%s: a scheme of type %v is not supported here", name, typ)
	}
	return nil
}

// CheckResponse checks an answer to req (its status, header and body)
// and returns the problems found.
func (d *OpenAPI) CheckResponse(req *http.Request, status int, header http.Header, body []byte) []string {
	r, err := d.Route(req.Method, req.URL.EscapedPath())
	if err != nil {
		return []string{err.Error()}
	}
	responses := pointer(r.op, "responses")
	code := ""
	for _, c := range []string{strconv.Itoa(status), fmt.Sprintf("%dXX", status/100), "default"} {
		if d.at(pointer(responses, c)) != nil {
			code = c
			break
		}
	}
	if code == "" {
		return []string{fmt.Sprintf("the status %d is not described (described: %v)", status, keys(d.at(responses)))}
	}
	res, ptr := d.object(pointer(responses, code))
	if res == nil {
		return []string{fmt.Sprintf("the response %s does not resolve", pointer(responses, code))}
	}
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, oneLine(format, args...)) }
	for _, name := range keys(res["headers"]) {
		if strings.EqualFold(name, "Content-Type") {
			continue // OpenAPI: described by the content, ignored here
		}
		h, hptr := d.object(pointer(ptr, "headers", name))
		values := header.Values(name)
		if len(values) == 0 {
			if h["required"] == true {
				add("the required header %s is missing", name)
			}
			continue
		}
		if h["schema"] == nil {
			continue
		}
		for _, v := range values {
			if err := d.checkText(pointer(hptr, "schema"), v); err != nil {
				add("the header %s: %q: %v", name, v, err)
			}
		}
	}
	if len(keys(res["content"])) == 0 {
		if len(body) > 0 {
			add("the answer has a body, but the response %s describes none", code)
		}
		return problems
	}
	mptr, mt, err := d.mediaType(pointer(ptr, "content"), header.Get("Content-Type"))
	if err != nil {
		add("the %v", err)
		return problems
	}
	if err := d.checkBody(pointer(mptr, "schema"), mt, body); err != nil {
		add("the body: %v", err)
	}
	return problems
}

// oneLine formats a problem on one line (the schemas' validator writes
// its errors on several).
func oneLine(format string, args ...any) string {
	return strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " ")
}
