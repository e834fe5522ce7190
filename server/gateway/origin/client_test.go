package origin

import "testing"

// TestLocalLocation: an origin's redirect naming the origin itself comes
// back through the gateway; any other is left alone.
func TestLocalLocation(t *testing.T) {
	u := &Client{addr: "127.0.0.1:8000"}
	for _, tc := range []struct{ loc, host, want string }{
		{"http://127.0.0.1:8000/checkout/", "shop.example", "/checkout/"},
		{"http://127.0.0.1:8000", "shop.example", "/"},
		{"http://127.0.0.1:8000/a?b=1#c", "shop.example", "/a?b=1#c"},
		{"//127.0.0.1:8000/checkout/", "shop.example", "/checkout/"},
		// nginx's default: the visitor's host name at the origin's port.
		{"http://localhost:8000/checkout/", "localhost:8080", "/checkout/"},
		{"http://LOCALHOST:8000/x", "localhost", "/x"},
		// A path that would read as a host is not made of one.
		{"http://127.0.0.1:8000//evil.example/x", "shop.example", "/evil.example/x"},
		// Not the origin: kept.
		{"http://localhost:8080/checkout/", "localhost:8080", "http://localhost:8080/checkout/"},
		{"https://pay.example/x", "shop.example", "https://pay.example/x"},
		{"http://127.0.0.1:8001/x", "shop.example", "http://127.0.0.1:8001/x"},
		{"http://127.0.0.1/x", "shop.example", "http://127.0.0.1/x"},
		{"/checkout/", "shop.example", "/checkout/"},
		{"checkout/", "shop.example", "checkout/"},
		{"ftp://127.0.0.1:8000/x", "shop.example", "ftp://127.0.0.1:8000/x"},
		{"http://user@127.0.0.1:8000/x", "shop.example", "http://user@127.0.0.1:8000/x"},
		{"http://%zz", "shop.example", "http://%zz"},
	} {
		if got := string(u.localLocation([]byte(tc.loc), []byte(tc.host))); got != tc.want {
			t.Errorf("Location %q (Host %q) = %q, want %q", tc.loc, tc.host, got, tc.want)
		}
	}
	tls := &Client{addr: "shop.internal:443", tls: true}
	if got := string(tls.localLocation([]byte("https://shop.internal/cart"), []byte("shop.example"))); got != "/cart" {
		t.Errorf("https origin, default port: %q, want /cart", got)
	}
}
