package api

import (
	"errors"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// What a request's access line says beside its request id: the route that
// matched and the user, recorded on the fasthttp request like the id. Both
// are kept as pointers (the route's own, the token's subject), so that
// noting them costs no allocation on requests whose line is never written.

type routeKey struct{}
type userKey struct{}

// Unmatched is the route of a request no route matched (or whose handler
// said not found): one name for every unknown path.
const Unmatched = "unmatched"

var unmatchedRoute = &fiber.Route{Path: Unmatched}

// RouteName is the route pattern a request ended on, given the error its
// handlers returned: Unmatched for a 404 or 405 from Fiber's router (or a
// handler's fiber.ErrNotFound). It records it on the request (Route), for
// the access line: call it once the handlers are done.
func RouteName(c *fiber.Ctx, err error) string {
	r := c.Route()
	if err != nil && notFound(err) {
		r = unmatchedRoute
	}
	c.Context().SetUserValue(routeKey{}, r)
	return r.Path
}

// Route is the route pattern recorded on ctx's request (RouteName,
// called by RequestContext unless an inner middleware did); "" when none
// was (no handler ran: a refusal below Fiber, the gateway's requests).
func Route(ctx *fasthttp.RequestCtx) string {
	if r, ok := ctx.UserValue(routeKey{}).(*fiber.Route); ok {
		return r.Path
	}
	return ""
}

// SetUser records the request's user (a token's subject, by reference).
func SetUser(c *fiber.Ctx, user *string) { c.Context().SetUserValue(userKey{}, user) }

// User is the user recorded on ctx's request, "" when none was.
func User(ctx *fasthttp.RequestCtx) string {
	if u, ok := ctx.UserValue(userKey{}).(*string); ok {
		return *u
	}
	return ""
}

// notFound reports whether err is Fiber's 404 or 405. (Apart, and only
// for errors: errors.As's target escapes, an allocation per request.)
func notFound(err error) bool {
	var fe *fiber.Error
	return errors.As(err, &fe) && (fe.Code == fiber.StatusNotFound || fe.Code == fiber.StatusMethodNotAllowed)
}
