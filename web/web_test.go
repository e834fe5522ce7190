package web_test

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"waitingroom/web"
)

func mustRead(tb testing.TB, name string) string {
	tb.Helper()
	b, err := fs.ReadFile(web.FS(), name)
	if err != nil {
		tb.Fatalf("read %s: %v", name, err)
	}
	if len(b) == 0 {
		tb.Fatalf("%s is empty", name)
	}
	return string(b)
}

func TestFSHoldsThePage(t *testing.T) {
	for _, name := range []string{"index.html", "app.js", "style.css"} {
		mustRead(t, name)
	}
}

func TestIndexReferencesAssets(t *testing.T) {
	html := mustRead(t, "index.html")
	for _, want := range []string{`src="/static/app.js"`, `href="/static/style.css"`} {
		if !strings.Contains(html, want) {
			t.Errorf("index.html does not contain %s", want)
		}
	}
}

// The server sends Content-Security-Policy default-src 'self' without
// 'unsafe-inline', so inline scripts and styles would be blocked.
func TestIndexHasNoInlineCode(t *testing.T) {
	html := mustRead(t, "index.html")
	for _, m := range regexp.MustCompile(`(?is)<script([^>]*)>(.*?)</script>`).FindAllStringSubmatch(html, -1) {
		if !strings.Contains(m[1], "src=") || strings.TrimSpace(m[2]) != "" {
			t.Errorf("inline script: %.80s", m[0])
		}
	}
	if regexp.MustCompile(`(?i)<style[\s>]`).MatchString(html) {
		t.Error("index.html has a <style> tag")
	}
	if regexp.MustCompile(`(?i)\sstyle\s*=`).MatchString(html) {
		t.Error("index.html has a style= attribute")
	}
	if regexp.MustCompile(`(?i)\son[a-z]+\s*=`).MatchString(html) {
		t.Error("index.html has an inline event handler")
	}
}

// The streams authenticate with the HttpOnly wr_queue cookie; the page never
// builds a URL with a token in it (URLs end up in logs and histories).
func TestScriptPutsNoTokenInURLs(t *testing.T) {
	js := mustRead(t, "app.js")
	if m := regexp.MustCompile(`(?i)[?&](access_?|queue_?|entry_?)?token=`).FindString(js); m != "" {
		t.Errorf("app.js builds a URL with %q", m)
	}
	for _, want := range []string{"new EventSource(", "new WebSocket(", "pollAfterMs", "BroadcastChannel", "navigator.locks"} {
		if !strings.Contains(js, want) {
			t.Errorf("app.js lacks %s", want)
		}
	}
	if html := mustRead(t, "index.html"); !strings.Contains(html, `<meta name="referrer" content="no-referrer">`) {
		t.Error("index.html lacks the no-referrer meta")
	}
}

func mustReadAdmin(tb testing.TB, name string) string {
	tb.Helper()
	b, err := fs.ReadFile(web.AdminFS(), name)
	if err != nil {
		tb.Fatalf("read admin/%s: %v", name, err)
	}
	if len(b) == 0 {
		tb.Fatalf("admin/%s is empty", name)
	}
	return string(b)
}

// The dashboard is its own file system: none of it is in the public page's.
func TestAdminFSHoldsTheDashboard(t *testing.T) {
	html := mustReadAdmin(t, "index.html")
	for _, want := range []string{`src="/admin/static/dashboard.js"`, `href="/admin/static/dashboard.css"`, `<meta name="referrer" content="no-referrer">`} {
		if !strings.Contains(html, want) {
			t.Errorf("admin/index.html does not contain %s", want)
		}
	}
	mustReadAdmin(t, "dashboard.js")
	mustReadAdmin(t, "dashboard.css")
	for _, name := range []string{"dashboard.js", "dashboard.css", "admin/index.html"} {
		if _, err := fs.Stat(web.FS(), name); err == nil {
			t.Errorf("the public page's files hold %s", name)
		}
	}
}

func TestAdminHasNoInlineCodeAndNoOtherOrigins(t *testing.T) {
	html := mustReadAdmin(t, "index.html")
	for _, m := range regexp.MustCompile(`(?is)<script([^>]*)>(.*?)</script>`).FindAllStringSubmatch(html, -1) {
		if !strings.Contains(m[1], "src=") || strings.TrimSpace(m[2]) != "" {
			t.Errorf("inline script: %.80s", m[0])
		}
	}
	for _, re := range []string{`(?i)<style[\s>]`, `(?i)\sstyle\s*=`, `(?i)\son[a-z]+\s*=`} {
		if regexp.MustCompile(re).MatchString(html) {
			t.Errorf("admin/index.html matches %s (inline style or handler)", re)
		}
	}
	js := mustReadAdmin(t, "dashboard.js")
	// The one URL allowed is the SVG namespace, which is a name, not a fetch.
	for _, name := range []string{"index.html", "dashboard.js", "dashboard.css"} {
		src := strings.ReplaceAll(mustReadAdmin(t, name), "http://www.w3.org/2000/svg", "")
		if m := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`).FindString(src); m != "" {
			t.Errorf("admin/%s refers to another origin: %s", name, m)
		}
	}
	if regexp.MustCompile(`(?i)[?&][a-z_]*token=|localStorage\.setItem|document\.cookie\s*=`).MatchString(js) {
		t.Error("dashboard.js puts the token in a URL, localStorage or a cookie")
	}
	if !strings.Contains(js, "sessionStorage.setItem") || !strings.Contains(js, "Authorization: 'Bearer ' +") {
		t.Error("dashboard.js does not keep the token in sessionStorage and send it as a bearer header")
	}
}
