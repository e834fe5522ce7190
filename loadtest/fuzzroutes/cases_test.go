package fuzzroutes_test

import (
	"reflect"
	"strings"
	"testing"

	"waitingroom/loadtest/fuzzroutes"
)

// TestWire: a case's bytes are exactly its request line, Host, the case
// id, its headers, Content-Length and body; an absolute-form target gets
// the front door's authority.
func TestWire(t *testing.T) {
	for _, tc := range []struct {
		c    fuzzroutes.Case
		want string
	}{
		{fuzzroutes.Case{Method: "GET", Target: "/checkout/%252e%252e"},
			"GET /checkout/%252e%252e HTTP/1.1\r\nHost: h:1\r\nFuzz-Case: x.gateway.3\r\nContent-Length: 0\r\n\r\n"},
		{fuzzroutes.Case{Method: "POST", Target: "/checkout", Header: []string{"Content-Type: a, b"}, Body: "_method=GET"},
			"POST /checkout HTTP/1.1\r\nHost: h:1\r\nFuzz-Case: x.gateway.3\r\nContent-Type: a, b\r\nContent-Length: 11\r\n\r\n_method=GET"},
		{fuzzroutes.Case{Method: "GET", Target: "/checkout", Absolute: true, Scheme: "HTTP://"},
			"GET HTTP://h:1/checkout HTTP/1.1\r\nHost: h:1\r\nFuzz-Case: x.gateway.3\r\nContent-Length: 0\r\n\r\n"},
	} {
		if got := string(tc.c.Wire("h:1", "x.gateway.3")); got != tc.want {
			t.Errorf("Wire:\n got %q\nwant %q", got, tc.want)
		}
	}
}

// TestGenerate: a seed and an index always give the same case, other
// seeds other cases, and the cases vary: several methods, overrides,
// encodings at more than one depth.
func TestGenerate(t *testing.T) {
	seen := map[string]bool{}
	var methods, depth2, overrides, dots int
	methodSet := map[string]bool{}
	for i := range 2000 {
		a, b := fuzzroutes.Generate(1, i), fuzzroutes.Generate(1, i)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("case %d: %+v then %+v", i, a, b)
		}
		seen[string(a.Wire("h", "id"))] = true
		methodSet[a.Method] = true
		if strings.Contains(a.Target, "%25") {
			depth2++
		}
		if strings.Contains(a.Body, "_method") || strings.Contains(a.Target, "_method") || len(a.Header) > 0 {
			overrides++
		}
		if strings.Contains(a.Target, "..") || strings.Contains(strings.ToLower(a.Target), "%2e") {
			dots++
		}
	}
	methods = len(methodSet)
	if len(seen) < 1500 || methods < 4 || depth2 < 50 || overrides < 500 || dots < 200 {
		t.Errorf("2000 cases: %d distinct, %d methods, %d with %%25, %d overrides, %d dot segments: too little variety", len(seen), methods, depth2, overrides, dots)
	}
	same := 0
	for i := range 200 {
		if reflect.DeepEqual(fuzzroutes.Generate(1, i), fuzzroutes.Generate(2, i)) {
			same++
		}
	}
	if same > 40 {
		t.Errorf("seeds 1 and 2: %d of 200 cases alike", same)
	}
}
