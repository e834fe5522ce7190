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
	return claims, s.checkUser(claims.Subject)
}

// queueCookie is the HttpOnly cookie that enter sets with the queue token
// over plain HTTP; over HTTPS it is queueCookieHost (origin.go), which the
// /api/v1 gate hands to every handler under this name.
const queueCookie = "wr_queue"

// queueClaims verifies the request's queue token, from the Authorization
// header or the queue cookie.
func (s *Server) queueClaims(c *fiber.Ctx) (*token.Claims, error) {
	raw := api.Bearer(c)
	if raw == "" {
		raw = c.Cookies(queueCookie)
	}
	if raw == "" {
		return nil, api.ErrUnauthorized
	}
	claims, err := s.tokens.Parse(raw, token.KindQueue)
	if err != nil {
		return nil, err
	}
	return claims, s.checkUser(claims.Subject)
}

// userID formats a database user id as the token subject and queue member.
func userID(id int64) string { return strconv.FormatInt(id, 10) }
