package browser

// The waiting page's way back after admission, in headless Chromium: a
// ?return= that the browser's URL parser turns into another site's
// address sends the visitor to "/" of this site, never there.

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"waitingroom/cmd/waitingroom/systemtest"
)

// TestPageReturnStaysOnTheSite: return values whose dot segments resolve
// to a path starting "//" (a network-path reference once used alone) go to
// "/"; a good one goes where it says. The browser resolves evil.example to
// a local server that counts what reaches it: nothing may.
func TestPageReturnStaysOnTheSite(t *testing.T) {
	systemtest.Parallel(t)
	var evil atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		evil.Add(1)
		_, _ = w.Write([]byte("evil"))
	}))
	t.Cleanup(srv.Close)
	b := newBrowser(t, "host-resolver-rules=MAP evil.example "+strings.TrimPrefix(srv.URL, "http://"))
	in := gatewayPageEnv(t, nil, nil)
	p := b.tab(in)

	for _, ret := range []string{"/.//evil.example/x", "/..//evil.example", "/a/..//evil.example", "/%2e//evil.example",
		"/%2E%2E//evil.example/", "/./\\evil.example"} {
		p.open("/_wr/rooms/sale?return=" + url.QueryEscape(ret))
		p.waitOrigin("/", `"room":""`)
		if got := eval[string](p, `location.origin`); got != in.Base {
			t.Errorf("return=%s: the visitor ended at %s, want %s", ret, got, in.Base)
		}
	}
	p.open("/_wr/rooms/sale?return=" + url.QueryEscape("/checkout/pay"))
	p.waitOrigin("/checkout/pay", `"room":"sale"`)
	if got := eval[string](p, `location.origin`); got != in.Base {
		t.Errorf("a good return: the visitor ended at %s, want %s", got, in.Base)
	}
	if n := evil.Load(); n != 0 {
		t.Errorf("the other site got %d requests", n)
	}
}
