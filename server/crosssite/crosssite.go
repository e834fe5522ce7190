package crosssite

import (
	"bytes"
	"log/slog"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"waitingroom/server/api"
	"waitingroom/server/client"
	"waitingroom/server/seclog"
)

// Cross-site requests. The queue token travels in a cookie so that the
// page's EventSource and WebSocket (which cannot set headers) carry it; a
// browser also attaches that cookie to requests another site makes it send.
// SameSite=Lax stops most, not all (a top-level form POST in some browsers,
// any same-site subdomain, and WebSocket handshakes are not covered).
// So the API refuses with 403 cross_site, before any work:
//
//   - a state-changing request (any method but GET, HEAD, OPTIONS) that
//     carries the queue cookie and no Authorization header — the cookie
//     would be what authenticates it (leave, orders; enter takes an access
//     token in the header, never the cookie);
//   - in gateway mode, every state-changing request without an
//     Authorization header, cookie or not: an anonymous enter is
//     authenticated by the wr_visitor cookie or by nothing, and either way
//     another site could make its visitors' browsers take places;
//   - every WebSocket handshake, cookie or not;
//
// unless it comes from the same origin or from an origin in Gate.Origins
// (the operator's list of trusted origins). Same origin is judged from
// Sec-Fetch-Site when the browser sends it (same-origin and none pass;
// same-site and cross-site pass only with an allowed Origin), else from the
// Origin header against the request's Host ("null" is foreign; the host and
// port are compared, not the scheme, which a server behind a
// TLS-terminating proxy may not know; behind a trusted proxy its
// X-Forwarded-Host counts too). A request with neither header is not from a
// browser's cross-site context and passes. Requests carrying an
// Authorization header and no cookie (non-browser clients, the load tool,
// the page's own bearer calls) are unaffected: another site cannot make a
// browser send that header without a CORS preflight, which only
// Gate.Origins pass.
var ErrCrossSite = &api.Error{Status: fiber.StatusForbidden, Code: "cross_site",
	Message: "this request must come from the waiting room's own pages or an allowed origin"}

// Gate applies the rule above.
type Gate struct {
	// Origins are the operator's trusted origins.
	Origins []string
	// Anonymous (gateway mode): every state-changing request without an
	// Authorization header is judged, cookie or not.
	Anonymous bool
	// Cookie is the name the queue cookie of any room starts with (under
	// either name: plain or __Host-).
	Cookie string
	// Clients tells which peers are trusted proxies (X-Forwarded-Host)
	// and the address a refusal is logged with.
	Clients client.Resolver
	Sec     *seclog.Log // a refusal is a cross_site security event
}

// hasCookie reports whether the request carries a queue cookie of any
// room, under either name.
func (g *Gate) hasCookie(c *fiber.Ctx) bool {
	found := false
	c.Request().Header.VisitAllCookie(func(k, _ []byte) {
		k = bytes.TrimPrefix(k, []byte("__Host-"))
		if bytes.HasPrefix(k, []byte(g.Cookie)) {
			found = true
		}
	})
	return found
}

// Check refuses a cross-site request with ErrCrossSite, before any work.
func (g *Gate) Check(c *fiber.Ctx) error {
	if !api.WantsUpgrade(c) { // a WebSocket carries no CORS: its origin is judged
		switch c.Method() {
		case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
			return nil
		}
		bearer := c.Get(fiber.HeaderAuthorization) != ""
		if bearer || (!g.Anonymous && !g.hasCookie(c)) {
			return nil
		}
	}
	if g.sameOrigin(c) {
		return nil
	}
	g.Sec.Event(c.UserContext(), seclog.CrossSite, slog.String("address", g.Clients.IP(c.Context())),
		slog.String("origin", seclog.Value(c.Get(fiber.HeaderOrigin))),
		slog.String("fetch_site", seclog.Value(c.Get("Sec-Fetch-Site"))),
		slog.String("method", c.Method()), slog.String("path", seclog.Value(c.Path())))
	return ErrCrossSite
}

// sameOrigin judges whether the request comes from the same origin or an
// allowed one (see the rule above).
func (g *Gate) sameOrigin(c *fiber.Ctx) bool {
	origin := c.Get(fiber.HeaderOrigin)
	if origin != "" && g.allowedOrigin(origin) {
		return true
	}
	switch site := c.Get("Sec-Fetch-Site"); site {
	case "same-origin", "none":
		return true
	case "":
	default: // same-site, cross-site, or anything unknown
		return false
	}
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if origin == "null" || err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	if strings.EqualFold(u.Host, string(c.Request().Host())) {
		return true
	}
	fwd := c.Get(fiber.HeaderXForwardedHost)
	return fwd != "" && g.Clients.Trusted(c.Context().RemoteIP()) && strings.EqualFold(u.Host, strings.TrimSpace(fwd))
}

// allowedOrigin reports whether origin is in g.Origins.
func (g *Gate) allowedOrigin(origin string) bool {
	for _, o := range g.Origins {
		if strings.EqualFold(o, origin) {
			return true
		}
	}
	return false
}
