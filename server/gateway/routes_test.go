package gateway

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

func TestParseRoutes(t *testing.T) {
	rs, err := ParseRoutes(" POST /api/orders=sale, GET /checkout/*=sale ,* /vip/*=vip")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, r.String())
	}
	if strings.Join(got, ",") != "POST /api/orders=sale,GET /checkout/*=sale,* /vip/*=vip" {
		t.Fatalf("routes = %v", got)
	}
	if rs, err := ParseRoutes(""); err != nil || len(rs) != 0 {
		t.Fatalf("empty: %v, %v", rs, err)
	}
	for in, want := range map[string]string{
		"POST /api/orders":        "want METHOD /path=room",
		"post /api/orders=sale":   "unknown method",
		"GET checkout=sale":       "must start with /",
		"GET /a/*/b=sale":         "only as a final /*",
		"GET /a?x=1=sale":         "query",
		"GET /a/../b=sale":        "normalized",
		"GET /a//b=sale":          "normalized",
		"GET /a;b=sale":           "must not hold ;",
		"GET /a\\b=sale":          "must not hold ;",
		"GET /a%zz=sale":          "malformed percent-escape",
		"GET /_wr/api=sale":       "waiting room's own",
		"GET /_wr=sale":           "waiting room's own",
		"GET /checkout/*={bad}":   "room name",
		"GET=sale":                "want METHOD /path",
		"GET /x=sale,GET /y=Sale": "room name",
	} {
		if _, err := ParseRoutes(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error saying %q", in, err, want)
		}
	}
}

func TestTableMatchesMostSpecificFirst(t *testing.T) {
	rs, err := ParseRoutes("* /*=all, GET /checkout/*=sale, GET /checkout/cart=cart, POST /checkout/*=post, * /checkout/vip/*=vip")
	if err != nil {
		t.Fatal(err)
	}
	tab := NewTable(rs)
	for _, c := range []struct{ method, path, room string }{
		{"GET", "/checkout/cart", "cart"},
		{"HEAD", "/checkout/cart", "cart"}, // a GET route covers HEAD
		{"GET", "/checkout/x", "sale"},
		{"GET", "/checkout", "sale"},        // the prefix itself
		{"GET", "/checkoutx", "all"},        // not below /checkout/
		{"POST", "/checkout/x", "post"},     // the method picks the route
		{"GET", "/checkout/vip/a", "vip"},   // the longer prefix wins
		{"DELETE", "/checkout/cart", "all"}, // no route for DELETE below /checkout
		{"GET", "/", "all"},
	} {
		if room, ok, err := tab.Match(c.method, c.path, c.path); !ok || err != nil || room != c.room {
			t.Errorf("%s %s = %q, %v, %v; want %q", c.method, c.path, room, ok, err, c.room)
		}
	}
	exact := NewTable([]Route{{Method: "POST", Pattern: "/api/orders", Room: "sale"}})
	for _, c := range [][2]string{{"GET", "/api/orders"}, {"POST", "/api/orders/1"}, {"POST", "/api/order"}} {
		if room, ok, _ := exact.Match(c[0], c[1], c[1]); ok {
			t.Errorf("%s %s matched %q", c[0], c[1], room)
		}
	}
}

// match matches a request-target as the public port sees it: the path as
// the origin would receive it and the one sent (RequestPaths).
func match(t *testing.T, tab *Table, method, target string) (string, bool, error) {
	t.Helper()
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(method)
	ctx.Request.Header.SetHost("shop.example")
	ctx.Request.SetRequestURI(target)
	sent, raw := RequestPaths(&ctx)
	return tab.Match(method, sent, raw)
}

// TestMatchCanonicalForms: every spelling of a route that some mainstream
// origin routes to the same handler matches it; near misses do not; an
// ambiguous path is an error whatever the routes.
func TestMatchCanonicalForms(t *testing.T) {
	rs, err := ParseRoutes("POST /api/orders=sale, GET /checkout/*=sale, GET /Files/Report.PDF=doc, GET /caf%C3%A9/=cafe, * /vip/*=vip")
	if err != nil {
		t.Fatal(err)
	}
	tab := NewTable(rs)
	for _, c := range []struct{ method, target, room string }{
		// Case (Express, ASP.NET, IIS), also of the method.
		{"POST", "/API/Orders", "sale"}, {"POST", "/api/ORDERS", "sale"}, {"post", "/api/orders", "sale"},
		{"GET", "/CHECKOUT/PAY", "sale"}, {"GET", "/files/report.pdf", "doc"},
		// Slashes: trailing (Express, Rails, Django), repeated (fasthttp, Tomcat, nginx).
		{"POST", "/api/orders/", "sale"}, {"POST", "/api//orders//", "sale"}, {"POST", "//api/orders", "sale"},
		// Escapes of what a browser escapes: read alike before and after decoding.
		{"GET", "/caf%C3%A9", "cafe"}, {"GET", "/Caf%C3%A9/", "cafe"}, {"GET", "/caf%c3%a9", "cafe"},
		{"GET", "/checkout/%E2%9C%93", "sale"}, {"GET", "/checkout/a%20b", "sale"}, {"GET", "/checkout/%2e%2ex", "sale"},
		// ;params on any segment (Tomcat, Spring, Jetty).
		{"POST", "/api/orders;jsessionid=1", "sale"},
		{"GET", "/checkout;a=b/pay", "sale"},
		// Format suffixes (Rails' (.:format), Spring's suffix patterns).
		{"POST", "/api/orders.json", "sale"}, {"POST", "/api/orders.JSON/", "sale"}, {"POST", "/api/orders.v1.json", "sale"},
		{"GET", "/checkout.html", "sale"}, {"GET", "/files/report.pdf.gz", "doc"},
		// Trailing dots and spaces of a segment (Windows paths).
		{"POST", "/api/orders.", "sale"}, {"POST", "/api./orders", "sale"},
		// HEAD is GET; the query, a fragment, the absolute form do not count.
		{"HEAD", "/Checkout/Pay", "sale"}, {"POST", "/api/orders?x=1", "sale"}, {"POST", "/api/orders#x", "sale"},
		{"POST", "http://shop.example/API/orders/", "sale"}, {"DELETE", "/VIP", "vip"},
	} {
		if room, ok, err := match(t, tab, c.method, c.target); !ok || err != nil || room != c.room {
			t.Errorf("%s %s = %q, %v, %v; want %q", c.method, c.target, room, ok, err, c.room)
		}
	}
	for _, c := range [][2]string{
		{"GET", "/api/orders"}, {"POST", "/api/orders/1"}, {"POST", "/api/ordersx"}, {"POST", "/api/order"},
		{"POST", "/api-orders"}, {"POST", "/apiorders"}, {"POST", "/api/x/orders"}, {"POST", "/.api/orders"},
		{"GET", "/checkoutx"}, {"POST", "/checkout/pay"}, {"GET", "/files/report"}, {"GET", "/files/report.pdfx"},
		{"GET", "/x/checkout"}, {"GET", "/vipx"}, {"POST", "/api/orders%25zz"}, {"GET", "/static/%2e%2ex/app.js"},
		{"GET", "/public%2Fx"}, {"GET", "/a%252Fb"}, {"GET", "/x\\y"},
	} {
		if room, ok, err := match(t, tab, c[0], c[1]); ok || err != nil {
			t.Errorf("%s %s = %q, %v, %v; want no route", c[0], c[1], room, ok, err)
		}
	}
	// Readings that disagree (the path decoded once more, "\" as "/", cut
	// at a decoded "?" or "#", its compatibility form), or that hold a dot
	// segment: refused, never passed nor queued.
	for _, c := range [][2]string{
		{"POST", "/api\\orders"}, {"POST", "/api%5Corders"}, {"POST", "/api/orders\\"},
		{"POST", "/api/orders%2F"}, {"POST", "/api%2Forders"}, {"POST", "/%61pi/%6Frders"},
		{"POST", "/api/orders%252F"}, {"POST", "/api%252Forders"}, {"GET", "/CAF%C3%89/"},
		{"POST", "/api/orders%3Bx"}, {"POST", "/api/orders%20"}, {"GET", "/checkout%2Fpay"},
		{"GET", "/checkout%3F/x"}, {"GET", "/checkout%23x"}, {"GET", "/checkout%253Fx"},
		{"POST", "/api/orders;/x"}, {"POST", "/api/orders;x/y"}, {"POST", "/api;v=2/orders"}, {"POST", "/api/orders%3B/x"},
		{"POST", "/api/orderſ"}, {"GET", "/chec\u212Aout/x"}, // ſ and the Kelvin sign, sent escaped
		{"GET", "/checkout\uFF0Fpay"}, {"GET", "/\uFF43heckout/pay"}, {"GET", "/checkout\uFF3Cpay"},
		// Dot segments, spelled or encoded, at any depth, after a ;param,
		// with trailing dots or spaces, "\" for "/": protected path or not.
		{"POST", "/api/./orders"}, {"POST", "/api/x/../orders"}, {"POST", "/api/x/%2e%2e/orders"},
		{"POST", "/api/x/..;/orders"}, {"POST", "/api/orders/."}, {"POST", "/../api/orders"},
		{"POST", "/api/x/..%2Forders"}, {"GET", "/x/..\\checkout/a"}, {"GET", "/checkout/.."},
		{"GET", "/checkout/../"}, {"GET", "/checkout%2f.."}, {"GET", "/checkout/%2e%2e"},
		{"GET", "/checkout/%252e%252e"}, {"GET", "/checkout/x%252f..%252f..%252fpublic"},
		{"POST", "/api/orders/%252e%252e"}, {"GET", "/checkout/%25252e%25252e"}, {"GET", "/checkout/..."},
		{"GET", "/checkout/.. "}, {"GET", "/checkout/.%20"}, {"GET", "/checkout/\uFF0E\uFF0E"},
		{"GET", "/public/../x"}, {"GET", "/static/./app.js"}, {"GET", "/a/%2e/b"},
		// More rounds of escapes than are read.
		{"GET", "/x%2525252Fy"},
	} {
		room, ok, err := match(t, tab, c[0], c[1])
		if ok || !errors.Is(err, ErrAmbiguous) {
			t.Errorf("%s %s = %q, %v, %v; want ErrAmbiguous", c[0], c[1], room, ok, err)
		}
	}
	// Dot segments and rounds past three are refused whatever the routes.
	for _, p := range []string{"/public/../x", "/static/./app.js", "/a/%2e/b", "/a/%252e%252e/b", "/a/..;x/b", "/x%2525252Fy"} {
		if _, ok, err := match(t, NewTable(nil), "GET", p); ok || !errors.Is(err, ErrAmbiguous) {
			t.Errorf("GET %s with no routes = %v, %v; want ErrAmbiguous", p, ok, err)
		}
	}
	empty := NewTable(nil)
	for target, want := range map[string]string{
		"/api/orders%00":       "control character",
		"/a%0d%0aSet-Cookie:x": "control character",
		"/a%7F":                "control character",
		"/a%2500":              "control character", // NUL once decoded twice
		"/api/orders%zz":       "malformed percent-escape",
		"/api/orders%4":        "malformed percent-escape",
		"/api/orders%":         "malformed percent-escape",
		"/a/%u006F":            "malformed percent-escape",
		"/api/%C0%AForders":    "not UTF-8", // an overlong "/"
		"/api/%E0%80%AForders": "not UTF-8",
		"/api/orders%E9":       "not UTF-8", // Latin-1
		"/api/%ED%A0%80orders": "not UTF-8", // a surrogate
		"/api/%F4%90%80%80x":   "not UTF-8", // beyond U+10FFFF
		"/a/%25C0%25AF/orders": "not UTF-8",
	} {
		for _, tab := range []*Table{tab, empty} {
			_, ok, err := match(t, tab, "GET", target)
			if ok || !errors.Is(err, ErrInvalidPath) || !strings.Contains(err.Error(), want) {
				t.Errorf("GET %s = %v, %v; want an error saying %q", target, ok, err, want)
			}
		}
	}
}

// TestCanonicalPatterns: a pattern is read as a request's path is, so its
// own spelling does not matter.
func TestCanonicalPatterns(t *testing.T) {
	for pattern, want := range map[string]string{
		"/api/orders": "/api/orders", "/API/Orders/": "/api/orders", "/checkout/*": "/checkout/*", "/*": "/*",
		"/Caf%C3%A9/*": "/café/*", "/a%2Fb": "/a/b", "/": "/",
	} {
		if got := canonicalPattern(pattern); got != want {
			t.Errorf("canonicalPattern(%q) = %q, want %q", pattern, got, want)
		}
	}
}

func TestSettingsCheck(t *testing.T) {
	ok := Default(18)
	ok.Protect = []string{"GET /checkout/*"}
	if rs, err := ok.Check("sale"); err != nil || len(rs) != 1 || rs[0].Room != "sale" {
		t.Fatalf("valid settings: %v, %v", rs, err)
	}
	for name, mut := range map[string]func(*Settings){
		"challenge":  func(s *Settings) { s.Challenge = "captcha" },
		"difficulty": func(s *Settings) { s.Difficulty = 40 },
		"pass":       func(s *Settings) { s.Pass = "forever" },
		"ttl":        func(s *Settings) { s.SessionTTL = 0 },
		"max":        func(s *Settings) { s.SessionMax = s.SessionTTL / 2 },
		"protect":    func(s *Settings) { s.Protect = []string{"GET nope"} },
		"rate zero":  func(s *Settings) { s.SessionRate = 0 },
		"rate NaN":   func(s *Settings) { s.SessionRate = math.NaN() },
		"rate high":  func(s *Settings) { s.SessionRate = MaxSessionRate + 1 },
		"burst":      func(s *Settings) { s.SessionBurst = 0 },
		"burst high": func(s *Settings) { s.SessionBurst = MaxSessionBurst + 1 },
		"in flight":  func(s *Settings) { s.SessionInFlight = -1 },
	} {
		s := Default(18)
		mut(&s)
		if _, err := s.Check("sale"); err == nil {
			t.Errorf("%s: accepted %+v", name, s)
		}
	}
}

// BenchmarkMatch: the canonical form's cost on every request to the
// origin, protected or not.
func BenchmarkMatch(b *testing.B) {
	rs, _ := ParseRoutes("POST /api/orders=sale, GET /checkout/*=sale, * /vip/*=vip")
	tab := NewTable(rs)
	for _, p := range []string{"/static/app.3f2a.js", "/API//Orders;x=1/"} {
		b.Run(p, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _, _ = tab.Match("GET", p, p)
			}
		})
	}
}

// TestRoutedMethod: a POST an origin may route as another method (a form's
// or a query's _method) is matched by every route of its path.
func TestRoutedMethod(t *testing.T) {
	table := NewTable([]Route{{Method: "GET", Pattern: "/checkout/*", Room: "sale"}})
	for _, c := range []struct {
		method, target, contentType string
		protected                   bool
	}{
		{"GET", "/checkout/pay", "", true},
		{"POST", "/checkout/pay", "application/json", false},
		{"POST", "/checkout/pay", "", false},
		{"POST", "/checkout/pay?_method=GET", "application/json", true},
		{"POST", "/checkout/pay?_method=put", "", true},
		{"POST", "/checkout/pay?x[_Method]=GET", "", true},
		{"POST", "/checkout/pay?%5Fmethod=GET", "", true},
		// Any body: Rack reads a form from a POST with no media type or
		// one it splits at ",", Laravel reads JSON's _method.
		{"POST", "/checkout/pay", "application/x-www-form-urlencoded", true},
		{"POST", "/checkout/pay", "Multipart/Form-Data; boundary=x", true},
		{"POST", "/checkout/pay", "-", true},
		{"POST", "/checkout/pay", "application/x-www-form-urlencoded, text/plain", true},
		{"POST", "/checkout/pay", "application/json; body", true},
		{"POST", "/checkout/pay", "text/plain; body", true},
		{"POST", "/elsewhere", "application/x-www-form-urlencoded", false},
		{"PUT", "/checkout/pay?_method=GET", "application/x-www-form-urlencoded", false},
	} {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod(c.method)
		ctx.Request.SetRequestURI(c.target)
		ct, body := c.contentType, c.method != "GET"
		if ct == "application/json" || ct == "" {
			body = false // a POST with no body is a POST
		}
		ct, _ = strings.CutSuffix(ct, "; body")
		if ct != "" && ct != "-" {
			ctx.Request.Header.SetContentType(ct)
		}
		if body {
			ctx.Request.SetBodyString("_method=GET")
			ctx.Request.Header.SetContentLength(len("_method=GET"))
		}
		_, ok, err := table.Match(routedMethod(&ctx), string(ctx.Path()), string(ctx.URI().PathOriginal()))
		if err != nil || ok != c.protected {
			t.Errorf("%s %s (%s): protected %v, %v; want %v", c.method, c.target, c.contentType, ok, err, c.protected)
		}
	}
}
