package server

import (
	"errors"
	"log/slog"

	"github.com/gofiber/fiber/v2"

	"waitingroom/server/seclog"
	"waitingroom/server/token"
)

// apiGate runs before every /api/v1 handler, after denyIPs: it refuses
// cross-site requests (package crosssite) and records the security events of the handler's
// refusals. (Handlers read the queue cookie with queueCookieValue, the
// __Host- one first.)
func (s *Server) apiGate(c *fiber.Ctx) error {
	if err := s.crossSite.Check(c); err != nil {
		return err
	}
	err := c.Next()
	if err != nil {
		s.noteRefusal(c, err)
	}
	return err
}

// noteRefusal records the security event of a handler's refusal, if it is
// one: a refused token (with the reason, one of token.Reason's fixed words,
// never the token or the request's bytes). Rate-limit refusals are recorded
// where they are decided (package httplimit), with the limit's name.
func (s *Server) noteRefusal(c *fiber.Ctx, err error) {
	var reason string
	switch {
	case errors.Is(err, token.ErrInvalid):
		reason = token.Reason(err)
	case errors.Is(err, errWrongRoom):
		reason = "wrong_room"
	default:
		return
	}
	s.sec.Event(c.UserContext(), seclog.TokenRefused, slog.String("address", s.clientIP(c)),
		slog.String("reason", reason), slog.String("method", c.Method()), slog.String("path", seclog.Value(c.Path())))
}
