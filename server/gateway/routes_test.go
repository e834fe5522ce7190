package gateway

import (
	"strings"
	"testing"
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
		if room, ok := tab.Match(c.method, c.path); !ok || room != c.room {
			t.Errorf("%s %s = %q, %v; want %q", c.method, c.path, room, ok, c.room)
		}
	}
	exact := NewTable([]Route{{Method: "POST", Pattern: "/api/orders", Room: "sale"}})
	for _, c := range [][2]string{{"GET", "/api/orders"}, {"POST", "/api/orders/1"}, {"POST", "/api/order"}} {
		if room, ok := exact.Match(c[0], c[1]); ok {
			t.Errorf("%s %s matched %q", c[0], c[1], room)
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
	} {
		s := Default(18)
		mut(&s)
		if _, err := s.Check("sale"); err == nil {
			t.Errorf("%s: accepted %+v", name, s)
		}
	}
}
