package operator

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/openapi"
)

// TestOpenAPIChecker holds the checker of systemtest's openapi_check.go to
// its word, with no server: hand-made requests and answers against a small
// description (systemtest/testdata/openapi/sample.json) — every fault must be
// reported, with words that say which, and the good ones must not be.
func TestOpenAPIChecker(t *testing.T) {
	sample, err := os.ReadFile("../testdata/openapi/sample.json")
	if err != nil {
		t.Fatal(err)
	}
	api, err := systemtest.ParseOpenAPI("https://waitingroom.test/sample.json", sample)
	if err != nil {
		t.Fatal(err)
	}
	if err := api.CheckDocument(); err != nil {
		t.Fatalf("the sample is not valid OpenAPI 3.1: %v", err)
	}
	if r, err := api.Route("GET", "/base/items/new"); err != nil || r.Template != "/items/new" {
		t.Errorf("GET /base/items/new: %v %v, want the literal /items/new", r, err)
	}
	if r, err := api.Route("GET", "/base/items/n%2Fw"); err != nil || r.Template != "/items/{id}" || r.Params["id"] != "n/w" {
		t.Errorf("GET /base/items/n%%2Fw: %+v %v, want /items/{id} with id n/w", r, err)
	}

	// check reports whether the problems are as wanted: none for want "",
	// else at least one, and all of them mentioning want.
	check := func(what string, problems []string, want string) {
		t.Helper()
		switch {
		case want == "" && len(problems) > 0:
			t.Errorf("%s: %q, want no problem", what, problems)
		case want != "" && len(problems) == 0:
			t.Errorf("%s: no problem reported, want one about %q", what, want)
		case want != "":
			for _, p := range problems {
				if !strings.Contains(p, want) {
					t.Errorf("%s: %q, want a problem about %q", what, p, want)
				}
			}
			t.Logf("%s: %q", what, problems)
		}
	}
	type hdr map[string]string
	// with is a header: h's values over defaults ("" removes one).
	with := func(defaults, h hdr) http.Header {
		out := http.Header{}
		for k, v := range defaults {
			out.Set(k, v)
		}
		for k, v := range h {
			out.Del(k)
			if v != "" {
				out.Set(k, v)
			}
		}
		return out
	}
	const item = `{"id":7,"name":"x","kind":"a","at":"2030-01-01T10:00:00Z"}`

	answers := []struct {
		name         string
		method, path string
		status       int
		header       hdr // over X-Request-Id and Content-Type: application/json
		body         string
		want         string
	}{
		{"a valid answer", "GET", "/base/items/7", 200, hdr{"Retry-After": "3"}, item, ""},
		{"a valid 4XX", "GET", "/base/items/7", 404, nil, `{"error":"no_such_item"}`, ""},
		{"a valid default", "PUT", "/base/items/7", 500, nil, `{"error":"broken"}`, ""},
		{"a valid answer without content", "PUT", "/base/items/7", 204, hdr{"Content-Type": ""}, "", ""},
		{"a valid text answer", "GET", "/base/items/new", 200, hdr{"Content-Type": "text/plain; charset=utf-8"}, "new", ""},
		{"an undescribed field", "GET", "/base/items/7", 200, nil, `{"id":7,"name":"x","extra":1}`, "'extra' not allowed"},
		{"a missing required field", "GET", "/base/items/7", 200, nil, `{"id":7}`, "missing property 'name'"},
		{"a wrong type", "GET", "/base/items/7", 200, nil, `{"id":"7","name":"x"}`, "want integer"},
		{"a value out of its enum", "GET", "/base/items/7", 200, nil, `{"id":7,"name":"x","kind":"c"}`, "kind"},
		{"a value under its minimum", "GET", "/base/items/7", 200, nil, `{"id":0,"name":"x"}`, "minimum"},
		{"a string too long", "GET", "/base/items/7", 200, nil, `{"id":7,"name":"abcdefghijk"}`, "maxLength"},
		{"a malformed date-time", "GET", "/base/items/7", 200, nil, `{"id":7,"name":"x","at":"tomorrow"}`, "date-time"},
		{"a missing X-Request-Id", "GET", "/base/items/7", 200, hdr{"X-Request-Id": ""}, item, "header X-Request-Id is missing"},
		{"a malformed X-Request-Id", "GET", "/base/items/7", 200, hdr{"X-Request-Id": "a!"}, item, "header X-Request-Id"},
		{"a Retry-After under its minimum", "GET", "/base/items/7", 200, hdr{"Retry-After": "0"}, item, "header Retry-After"},
		{"a Retry-After not an integer", "GET", "/base/items/7", 200, hdr{"Retry-After": "soon"}, item, "header Retry-After"},
		{"an undescribed status", "GET", "/base/items/7", 500, nil, `{"error":"broken"}`, "status 500 is not described"},
		{"an undescribed path", "GET", "/base/nowhere", 200, nil, item, "no path template matches"},
		{"a path outside the server URL", "GET", "/items/7", 200, nil, item, "not under the server URL"},
		{"an undescribed method", "DELETE", "/base/items/7", 200, nil, item, "no DELETE operation"},
		{"an undescribed Content-Type", "GET", "/base/items/7", 200, hdr{"Content-Type": "text/html"}, item, "Content-Type"},
		{"no Content-Type", "GET", "/base/items/7", 200, hdr{"Content-Type": ""}, item, "Content-Type"},
		{"an empty JSON body", "GET", "/base/items/7", 200, nil, "", "body: empty"},
		{"a body that is not JSON", "GET", "/base/items/7", 200, nil, `{"id":7,`, "not JSON"},
		{"JSON and more", "GET", "/base/items/7", 200, nil, item + `{}`, "not JSON"},
		{"a body where none is described", "PUT", "/base/items/7", 204, nil, `{}`, "describes none"},
		{"a text body off its schema", "GET", "/base/items/new", 200, hdr{"Content-Type": "text/plain"}, "old", "body"},
	}
	for _, a := range answers {
		req := httptest.NewRequest(a.method, "http://waitingroom.test"+a.path, nil)
		h := with(hdr{"X-Request-Id": "abcd1234", "Content-Type": "application/json"}, a.header)
		check("answer: "+a.name, api.CheckResponse(req, a.status, h, []byte(a.body)), a.want)
	}

	requests := []struct {
		name         string
		method, path string
		header       hdr // over Authorization: Bearer, X-Trace and Content-Type: application/json
		body         string
		want         string
	}{
		{"a valid request", "GET", "/base/items/7?verbose=true", nil, "", ""},
		{"a valid request with the key cookie", "GET", "/base/items/7", hdr{"Authorization": "", "Cookie": "k=1"}, "", ""},
		{"a valid body", "PUT", "/base/items/7", nil, item, ""},
		{"a valid cookie parameter", "GET", "/base/items/new", hdr{"Cookie": "session=s1"}, "", ""},
		{"a missing required header", "GET", "/base/items/7", hdr{"X-Trace": ""}, "", "header parameter X-Trace is missing"},
		{"a header off its schema", "GET", "/base/items/7", hdr{"X-Trace": "ab"}, "", "header parameter X-Trace"},
		{"a path parameter off its schema", "GET", "/base/items/abc", nil, "", "path parameter id"},
		{"a query parameter off its schema", "GET", "/base/items/7?verbose=maybe", nil, "", "query parameter verbose"},
		{"a missing required cookie", "GET", "/base/items/new", nil, "", "cookie parameter session is missing"},
		{"no credential", "GET", "/base/items/7", hdr{"Authorization": ""}, "", "no security requirement is met"},
		{"a credential of another scheme", "GET", "/base/items/7", hdr{"Authorization": "Basic eDp5"}, "", "no security requirement is met"},
		{"a missing required body", "PUT", "/base/items/7", nil, "", "required body is missing"},
		{"a body with an undescribed field", "PUT", "/base/items/7", nil, `{"id":7,"name":"x","extra":1}`, "'extra' not allowed"},
		{"a body of an undescribed Content-Type", "PUT", "/base/items/7", hdr{"Content-Type": "text/plain"}, item, "Content-Type"},
		{"a body where none is described", "GET", "/base/items/7", nil, `{}`, "describes none"},
		{"an undescribed path", "GET", "/base/nowhere", nil, "", "no path template matches"},
	}
	for _, r := range requests {
		req := httptest.NewRequest(r.method, "http://waitingroom.test"+r.path, strings.NewReader(r.body))
		req.Header = with(hdr{"Authorization": "Bearer t0k3n", "X-Trace": "abc", "Content-Type": "application/json"}, r.header)
		check("request: "+r.name, api.CheckRequest(req, []byte(r.body)), r.want)
	}

	// Broken documents: the document check, or the compilation of a
	// schema, must refuse each.
	edit := func(f func(doc map[string]any)) []byte {
		var doc map[string]any
		if err := json.Unmarshal(sample, &doc); err != nil {
			t.Fatal(err)
		}
		f(doc)
		out, _ := json.Marshal(doc)
		return out
	}
	obj := func(v any, keys ...string) map[string]any {
		for _, k := range keys {
			v = v.(map[string]any)[k]
		}
		return v.(map[string]any)
	}
	broken := []struct {
		name string
		doc  []byte
	}{
		{"no info", edit(func(d map[string]any) { delete(d, "info") })},
		{"OpenAPI 3.0", edit(func(d map[string]any) { d["openapi"] = "3.0.3" })},
		{"a status that is not one", edit(func(d map[string]any) {
			r := obj(d, "paths", "/items/{id}", "get", "responses")
			r["2OO"] = r["200"]
		})},
		{"a parameter in the body", edit(func(d map[string]any) {
			obj(d, "paths", "/items/{id}")["parameters"].([]any)[0].(map[string]any)["in"] = "body"
		})},
		{"an unknown field", edit(func(d map[string]any) { obj(d, "paths", "/items/new", "get")["response"] = map[string]any{} })},
		{"a schema that is not one", edit(func(d map[string]any) {
			obj(d, "components", "schemas", "Item", "properties", "id")["type"] = 5
		})},
		{"a $ref to nowhere", edit(func(d map[string]any) {
			obj(d, "components", "responses", "Item", "content", "application/json", "schema")["$ref"] = "#/components/schemas/Nothing"
		})},
	}
	for _, b := range broken {
		d, err := systemtest.ParseOpenAPI("https://waitingroom.test/broken.json", b.doc)
		if err == nil {
			err = d.CheckDocument()
		}
		if err == nil {
			t.Errorf("a document with %s passes", b.name)
		} else {
			t.Logf("a document with %s: %s", b.name, strings.Join(strings.Fields(err.Error()), " "))
		}
	}

	// The served descriptions themselves.
	for name, doc := range map[string][]byte{"public.json": openapi.Public, "admin.json": openapi.Admin} {
		d, err := systemtest.ParseOpenAPI("https://waitingroom.test/"+name, doc)
		if err == nil {
			err = d.CheckDocument()
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
