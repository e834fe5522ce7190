package page

import (
	"io/fs"
	"strings"
	"testing"

	"waitingroom/web"
)

// TestGatewayPageRewrite: the page's markup still has what gatewayPage
// rewrites — the root element and every asset under /static/ — so a
// change to index.html cannot silently break gateway mode's page.
func TestGatewayPageRewrite(t *testing.T) {
	index, err := fs.ReadFile(web.FS(), "index.html")
	if err != nil {
		t.Fatal(err)
	}
	out := string(gatewayPage(index, "/_wr"))
	if !strings.Contains(out, `<html lang="en" data-base="/_wr" data-gateway="1">`) {
		t.Fatal(`index.html's root element is no longer <html lang="en">: update gatewayPage`)
	}
	for _, attr := range []string{`href="/static/`, `src="/static/`} {
		if strings.Contains(out, attr) {
			t.Fatalf("an asset outside /_wr/ is left: %s", attr)
		}
	}
	if !strings.Contains(out, `src="/_wr/static/app.js"`) || !strings.Contains(out, `href="/_wr/static/style.css"`) {
		t.Fatalf("assets not moved under /_wr/: %s", out)
	}
}
