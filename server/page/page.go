package page

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"waitingroom/server/api"
	"waitingroom/web"
)

// Mount serves the waiting-room page at prefix+"/" and
// prefix+"/rooms/{room}", and its assets under prefix+"/static/". prefix
// is "" or, in gateway mode, gateway.Prefix, where the page is told so
// (data-base and data-gateway on its root element).
func Mount(app *fiber.App, prefix string) {
	files := api.LoadStatic(web.FS())
	index, ok := files["index.html"]
	if !ok {
		panic("page: web.FS has no index.html")
	}
	if prefix != "" {
		index.Body = gatewayPage(index.Body, prefix)
	}
	page := func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentSecurityPolicy, api.PageCSP)
		c.Set(fiber.HeaderCacheControl, "no-cache")
		c.Set(fiber.HeaderContentType, "text/html; charset=utf-8")
		return c.Send(index.Body)
	}
	app.Get(prefix+"/", page)
	app.Get(prefix+"/rooms/:room", page)
	app.Get(prefix+"/static/*", func(c *fiber.Ctx) error {
		name := c.Params("*")
		f, ok := files[name]
		if !ok || strings.Contains(name, "..") {
			return fiber.ErrNotFound
		}
		c.Set(fiber.HeaderContentSecurityPolicy, api.PageCSP)
		c.Set(fiber.HeaderCacheControl, "public, max-age=300")
		c.Set(fiber.HeaderContentType, f.ContentType)
		return c.Send(f.Body)
	})
}

// gatewayPage is the page for gateway mode: its assets under prefix, and
// its root element saying where the API is and that visitors are
// anonymous.
func gatewayPage(body []byte, prefix string) []byte {
	r := strings.NewReplacer(`href="/static/`, `href="`+prefix+`/static/`, `src="/static/`, `src="`+prefix+`/static/`,
		`<html lang="en">`, `<html lang="en" data-base="`+prefix+`" data-gateway="1">`)
	return []byte(r.Replace(string(body)))
}
