package gateway

import (
	"net/http"
	"testing"

	"waitingroom/cmd/waitingroom/systemtest"
)

// TestGatewayRefusesCrossSiteEnters: in gateway mode an anonymous enter
// from another site is refused with 403 cross_site — carrying only the
// wr_visitor cookie or no cookie at all — judged from Sec-Fetch-Site, or
// from Origin when the browser sends no Sec-Fetch-Site; the page's own
// enters, and clients that send neither header, enter.
func TestGatewayRefusesCrossSiteEnters(t *testing.T) {
	in := systemtest.GatewayInstance(t, systemtest.StartOrigin(t), nil)
	enter := in.Base + "/_wr/api/v1/rooms/sale/enter"
	// A visitor who entered and left: only the wr_visitor cookie is left.
	c := systemtest.Visitor(t)
	if code, _, m := systemtest.Call(t, c, "POST", enter, ""); code != 200 {
		t.Fatalf("enter: %d %v", code, m)
	}
	if code, _, _ := systemtest.Call(t, c, "POST", in.Base+"/_wr/api/v1/rooms/sale/leave", ""); code != 204 {
		t.Fatalf("leave: %d", code)
	}
	req, _ := http.NewRequest("POST", enter, nil)
	var names []string
	for _, ck := range c.Jar.Cookies(req.URL) {
		names = append(names, ck.Name)
	}
	if len(names) != 1 || names[0] != "wr_visitor" {
		t.Fatalf("cookies after leave: %v, want only wr_visitor", names)
	}
	for _, tt := range []struct {
		name   string
		client *http.Client
		hdr    []string
	}{
		{"wr_visitor only, Sec-Fetch-Site cross-site", c, []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}},
		{"wr_visitor only, Sec-Fetch-Site same-site", c, []string{"Sec-Fetch-Site", "same-site", "Origin", "https://shop.evil.example"}},
		{"wr_visitor only, a foreign Origin", c, []string{"Origin", "https://evil.example"}},
		{"wr_visitor only, Origin null", c, []string{"Origin", "null"}},
		{"no cookie, cross-site", http.DefaultClient, []string{"Sec-Fetch-Site", "cross-site"}},
	} {
		if code, _, m := systemtest.Call(t, tt.client, "POST", enter, "", tt.hdr...); code != 403 || m["error"] != "cross_site" {
			t.Errorf("%s: %d %v, want 403 cross_site", tt.name, code, m)
		}
	}
	if code, _, m := systemtest.Call(t, c, "GET", in.Base+"/_wr/api/v1/rooms/sale/position", ""); code == 200 {
		t.Fatalf("the visitor after the refused enters: %d %v, want no place", code, m)
	}
	for _, tt := range []struct {
		name string
		hdr  []string
	}{
		{"same-origin", []string{"Sec-Fetch-Site", "same-origin", "Origin", in.Base}},
		{"Origin of the page's own host", []string{"Origin", in.Base}},
		{"neither header (not a browser)", nil},
	} {
		if code, _, m := systemtest.Call(t, systemtest.Visitor(t), "POST", enter, "", tt.hdr...); code != 200 {
			t.Errorf("%s: %d %v, want 200", tt.name, code, m)
		}
	}
}
