package server

import (
	"github.com/gofiber/fiber/v2"

	"waitingroom/server/api"
	"waitingroom/server/push"
	"waitingroom/server/token"
)

// The push streams (package push) at the public app: the checks before a
// stream starts (openStream), the handlers push serves them with.

// openStream admits a stream's request (push.Options.Open): its queue
// token, the stream limit, the user's status (a user dropped as idle gets
// the idle refusal here) and the client's stream slot (holdStream).
func (s *Server) openStream(c *fiber.Ctx) (*push.Start, error) {
	claims, room, err := s.streamClaims(c)
	if err != nil {
		return nil, err
	}
	st, err := s.currentStatus(c.UserContext(), room, claims)
	if err != nil {
		return nil, s.notInQueue(c, err)
	}
	release, err := s.holdStream(c)
	if err != nil {
		return nil, err
	}
	return &push.Start{Claims: claims, Room: room, Status: st, Release: release}, nil
}

// streamClaims verifies the queue token of a stream request: from the
// Authorization header, the wr_queue cookie, or — on stream endpoints
// only — the token query parameter (EventSource cannot set headers).
func (s *Server) streamClaims(c *fiber.Ctx) (*token.Claims, string, error) {
	raw := api.Bearer(c)
	if raw == "" {
		raw = queueCookieValue(s.gw != nil, requestCookie(c), roomParam(c))
	}
	if raw == "" {
		raw = c.Query("token")
	}
	if raw == "" {
		return nil, "", api.ErrUnauthorized
	}
	claims, err := s.tokens.Parse(raw, token.KindQueue)
	if err != nil {
		return nil, "", err
	}
	api.SetUser(c, &claims.Subject) // for the access line
	if err := s.checkUser(claims.Subject); err != nil {
		return nil, "", err
	}
	room := roomParam(c)
	if claims.Room != room {
		return nil, "", errWrongRoom
	}
	if err := s.rl.One(c, "stream", room+":"+claims.Subject, claims.Subject, s.cfg.Limits.Stream, true); err != nil {
		return nil, "", err
	}
	return claims, room, nil
}
