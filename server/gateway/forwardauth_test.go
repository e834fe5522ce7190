package gateway

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"waitingroom/server/pass"
	"waitingroom/server/token"
)

// TestAsciiJSON: a body fit for a header value reads back as the same JSON.
func TestAsciiJSON(t *testing.T) {
	in, _ := json.Marshal(map[string]string{"message": "é \u2028 😀 \x01 \"q\""})
	out := asciiJSON(append(in, 0xff))
	for _, c := range out {
		if c < 0x20 || c >= 0x7f {
			t.Fatalf("byte %#x in %q", c, out)
		}
	}
	var m map[string]string
	if err := json.Unmarshal(asciiJSON(in), &m); err != nil || m["message"] != "é \u2028 😀 \x01 \"q\"" {
		t.Fatalf("%q read back as %v (%v)", asciiJSON(in), m, err)
	}
}

// TestForNginx: auth_request takes 2xx, 401 and 403: the waiting page's
// 303 becomes 401, any other refusal 403 with the real status and body.
func TestForNginx(t *testing.T) {
	var ctx fasthttp.RequestCtx
	ctx.Response.Header.Set("Location", "/_wr/rooms/sale?return=%2F")
	ctx.SetStatusCode(fasthttp.StatusSeeOther)
	forNginx(&ctx)
	if ctx.Response.StatusCode() != 401 || string(ctx.Response.Header.Peek("Location")) != "/_wr/rooms/sale?return=%2F" {
		t.Fatalf("303: %d %q", ctx.Response.StatusCode(), ctx.Response.Header.Peek("Location"))
	}
	ctx.Response.Reset()
	writeJSON(&ctx, fasthttp.StatusTooManyRequests, 3, map[string]string{"error": "rate_limited"})
	forNginx(&ctx)
	h := &ctx.Response.Header
	if ctx.Response.StatusCode() != 403 || string(h.Peek("Waitingroom-Status")) != "429" ||
		string(h.Peek("Waitingroom-Answer")) != `{"error":"rate_limited"}` || string(h.Peek("Retry-After")) != "3" {
		t.Fatalf("429: %d %s", ctx.Response.StatusCode(), h.String())
	}
	ctx.Response.Reset()
	allow(&ctx, "p")
	forNginx(&ctx)
	if ctx.Response.StatusCode() != 200 || string(ctx.Response.Header.Peek("Waitingroom-Pass")) != "p" {
		t.Fatalf("200: %d", ctx.Response.StatusCode())
	}
}

// TestAuthTargets: what the endpoint takes as the original request.
func TestAuthTargets(t *testing.T) {
	for _, tc := range []struct {
		v  string
		ok bool
	}{
		{"/", true}, {"/checkout/x?a=1&b=%20", true}, {"/%zz", true}, // %zz: the routes refuse it
		{"/" + strings.Repeat("a", 8<<10), false}, {"/" + strings.Repeat("a", 8<<10-1), true},
		{"", false}, {"checkout", false}, {"http://x/checkout", false}, {"/a b", false}, {"/a\x00", false}, {"/\xc3\xa9", false}, {"*", false},
	} {
		if got := validTarget([]byte(tc.v)); got != tc.ok {
			t.Errorf("target %q: %v, want %v", tc.v, got, tc.ok)
		}
	}
	for _, tc := range []struct {
		v  string
		ok bool
	}{{"GET", true}, {"PROPFIND", true}, {"get", false}, {"", false}, {"G T", false}, {"GET\r\n", false}} {
		if got := validMethod([]byte(tc.v)); got != tc.ok {
			t.Errorf("method %q: %v, want %v", tc.v, got, tc.ok)
		}
	}
	var h fasthttp.RequestHeader
	h.Set("X-Http-Method_Override", "POST")
	if !overridden(&h) {
		t.Error("an override spelled with _ was not seen")
	}
	h.Reset()
	h.Set("Expect", "100-continue")
	if overridden(&h) {
		t.Error("Expect read as an override")
	}
}

// TestForwardAuthCountsNoRequestsInFlight: a visit at its in-flight limit
// is refused by the gateway, which sees its requests end; forward auth
// sees a decision and never the request's end, so the same visit's
// decision passes there.
func TestForwardAuthCountsNoRequestsInFlight(t *testing.T) {
	key, err := pass.ParseKey(pass.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	signer, err := pass.New(pass.Config{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	tokens := token.New(token.Config{Secret: strings.Repeat("k", 32)})
	visit, err := tokens.IssueVisit("v-1", "sale", "pass-1", time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	st := Default(1)
	st.SessionInFlight = 1
	for _, auth := range []bool{false, true} {
		g := New(Options{Settings: NewStore(nil, "t:", nil, st), Signer: signer, Tokens: tokens})
		g.auth = auth
		release, _, _ := g.gate.acquire("sale\x00vpass-1", 1, time.Now()) // one request of the visit under way
		var ctx fasthttp.RequestCtx
		ok := g.visit(&ctx, "sale", st, visit)
		release()
		code, p := ctx.Response.StatusCode(), string(ctx.Response.Header.Peek(pass.HeaderName))
		switch {
		case !ok:
			t.Fatalf("auth %v: the visit was not read", auth)
		case auth && (code != 200 || p == ""):
			t.Errorf("forward auth, the visit's second decision at once: %d, pass %q; want 200 with a pass", code, p)
		case !auth && code != 429:
			t.Errorf("gateway, the visit's second request at once: %d, want 429", code)
		}
	}
}
