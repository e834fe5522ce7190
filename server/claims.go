package server

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"waitingroom/server/api"
	"waitingroom/server/token"
)

// The tokens a request carries: the access token of a logged-in user (login
// issues it) and the queue token of a user in a room (enter issues it).

// accessClaims verifies the request's access token.
func (s *Server) accessClaims(c *fiber.Ctx) (*token.Claims, error) {
	raw := api.Bearer(c)
	if raw == "" {
		return nil, api.ErrUnauthorized
	}
	claims, err := s.tokens.Parse(raw, token.KindAccess)
	if err != nil {
		return nil, err
	}
	api.SetUser(c, &claims.Subject) // for the access line
	return claims, s.checkUser(claims.Subject)
}

// Over HTTPS the queue cookie's name has the __Host- prefix: the browser
// accepts it only if Secure, with Path=/ and no Domain, so neither a
// sibling subdomain nor a network attacker on plain HTTP can plant or
// overwrite it. Both names are read; __Host- wins when both come.

// queueCookie is the HttpOnly cookie that enter sets with the queue token
// over plain HTTP; over HTTPS its name has the __Host- prefix (above).
// In gateway mode there is one per room, "wr_queue_<room>": a visitor may
// wait in several rooms of one site, and the gateway reads the one of the
// room a protected path belongs to.
const queueCookie = "wr_queue"

// queueCookieName is the queue cookie's plain name for room.
func (s *Server) queueCookieName(room string) string { return queueCookieNameOf(s.gw != nil, room) }

// queueCookieNameOf is the queue cookie's plain name for room, in gateway
// mode or not.
func queueCookieNameOf(gatewayMode bool, room string) string {
	if gatewayMode && room != "" {
		return queueCookie + "_" + room
	}
	return queueCookie
}

// queueCookieValue is the request's queue cookie for room (in gateway
// mode or not), the __Host- one when both come.
func queueCookieValue(gatewayMode bool, cookie func(name string) []byte, room string) string {
	name := queueCookieNameOf(gatewayMode, room)
	if v := cookie("__Host-" + name); len(v) > 0 {
		return string(v)
	}
	return string(cookie(name))
}

// requestCookie reads a cookie of a Fiber request.
func requestCookie(c *fiber.Ctx) func(string) []byte {
	return func(name string) []byte { return c.Request().Header.Cookie(name) }
}

// queueClaims verifies the request's queue token for room ("" outside a
// room: the order API), from the Authorization header or the queue cookie.
func (s *Server) queueClaims(c *fiber.Ctx, room string) (*token.Claims, error) {
	raw := api.Bearer(c)
	if raw == "" {
		raw = queueCookieValue(s.gw != nil, requestCookie(c), room)
	}
	if raw == "" {
		return nil, api.ErrUnauthorized
	}
	claims, err := s.tokens.Parse(raw, token.KindQueue)
	if err != nil {
		return nil, err
	}
	api.SetUser(c, &claims.Subject) // for the access line
	return claims, s.checkUser(claims.Subject)
}

// userID formats a database user id as the token subject and queue member.
func userID(id int64) string { return strconv.FormatInt(id, 10) }
