package admin

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"waitingroom/server/api"
	"waitingroom/web"
)

// dashboardCSP is api.PageCSP for the operator dashboard: its own files only,
// no inline script or style, fetches to its own origin only.
const dashboardCSP = api.PageCSP

// mountDashboard serves the operator dashboard (web/admin) on the management
// app: the page at GET /admin/ and its script and stylesheet under
// /admin/static/. It must be mounted before the /admin group, whose
// middleware would otherwise demand the admin token for these files.
//
// Token handling: the HTML, script and stylesheet are served WITHOUT the
// admin token. They are the same for everyone and hold no data or secret —
// a browser cannot attach a bearer token to a page navigation, so requiring
// it for the shell would force the token into a URL or a cookie. Everything
// with data or effect — GET /admin/rooms and PUT /admin/rooms/{room} — goes
// through the /admin group and needs the admin token (Options.Token) in
// "Authorization: Bearer …" as before. The operator types the token into
// the page; the script keeps it in sessionStorage (this tab only, gone when
// the tab closes), sends it only in the Authorization header of same-origin
// fetches (CSP connect-src 'self'), and never puts it in a URL, a cookie or
// localStorage. A token the server refuses is dropped and asked for again.
// No cookie means no ambient authority, so a cross-site form cannot act on
// the admin API on the operator's behalf.
func mountDashboard(app *fiber.App) {
	files := api.LoadStatic(web.AdminFS())
	index, ok := files["index.html"]
	if !ok {
		panic("admin: web.AdminFS has no index.html")
	}
	headers := func(c *fiber.Ctx) {
		c.Set(fiber.HeaderContentSecurityPolicy, dashboardCSP)
		c.Set("X-Content-Type-Options", "nosniff")
		c.Set("Referrer-Policy", "no-referrer")
		c.Set("X-Frame-Options", "DENY")
		c.Set("Cross-Origin-Opener-Policy", "same-origin")
		c.Set("Cross-Origin-Resource-Policy", "same-origin")
	}
	app.Get("/admin/", func(c *fiber.Ctx) error {
		headers(c)
		c.Set(fiber.HeaderCacheControl, "no-cache")
		c.Set(fiber.HeaderContentType, "text/html; charset=utf-8")
		return c.Send(index.Body)
	})
	app.Get("/admin/static/*", func(c *fiber.Ctx) error {
		name := c.Params("*")
		f, ok := files[name]
		if !ok || strings.Contains(name, "..") || name == "index.html" {
			return fiber.ErrNotFound
		}
		headers(c)
		c.Set(fiber.HeaderCacheControl, "no-cache")
		c.Set(fiber.HeaderContentType, f.ContentType)
		return c.Send(f.Body)
	})
}
