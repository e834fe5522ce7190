package server

import (
	"math"
	"time"

	"github.com/gofiber/fiber/v2"

	"waitingroom/queue"
)

// assumedHold is the order's connection hold time assumed until a room has
// measured its admission rate: the seed system's measured mean, 200 ms, so
// a room admits about targetActive / 0.2 s users per second.
const assumedHold = 200 * time.Millisecond

// QueueStatus is the contract's status document (position and enter).
type QueueStatus struct {
	Status         string     `json:"status"`
	Room           string     `json:"room"`
	Position       int64      `json:"position,omitempty"`
	Waiting        int64      `json:"waiting,omitempty"`
	ETASeconds     *int64     `json:"etaSeconds,omitempty"`
	EntryToken     string     `json:"entryToken,omitempty"`
	EntryExpiresAt *time.Time `json:"entryExpiresAt,omitempty"`
	PollAfterMs    int64      `json:"pollAfterMs"`
	QueueToken     string     `json:"queueToken,omitempty"`
}

// statusDoc turns a queue.Status into the contract's document.
func (s *Server) statusDoc(room string, st queue.Status) QueueStatus {
	d := QueueStatus{Status: st.State.String(), Room: room}
	switch st.State {
	case queue.Ready:
		exp := st.EntryExpires
		d.EntryToken, d.EntryExpiresAt = st.EntryToken, &exp
	case queue.Waiting:
		d.Position, d.Waiting = st.Position, st.Waiting
		d.PollAfterMs = s.cfg.PollBands.PollAfter(st.Position).Milliseconds()
		d.ETASeconds = eta(st)
	}
	return d
}

// eta is position ÷ admission rate, rounded up: the measured rate, or
// targetActive ÷ assumedHold until one is measured. Unknown (nil) when the
// room admits nobody.
func eta(st queue.Status) *int64 {
	rate := st.Rate
	if rate <= 0 {
		rate = float64(st.Target) / assumedHold.Seconds()
	}
	if rate <= 0 {
		return nil
	}
	secs := int64(math.Ceil(float64(st.Position) / rate))
	return &secs
}

// enter puts the caller in the room's queue (or reports where they are) and
// issues the queue token, also set as the HttpOnly wr_queue cookie.
func (s *Server) enter(c *fiber.Ctx) error {
	claims, err := s.accessClaims(c)
	if err != nil {
		return err
	}
	room := c.Params("room")
	st, err := s.q.Enter(c.UserContext(), room, claims.Subject)
	if err != nil {
		return err
	}
	if st.New {
		s.m.entered.WithLabelValues(room).Inc()
	}
	tok, err := s.tokens.IssueQueue(claims.Subject, room, st.Ticket, s.cfg.QueueTTL)
	if err != nil {
		return err
	}
	c.Cookie(&fiber.Cookie{
		Name:     queueCookie,
		Value:    tok,
		Path:     "/api/v1",
		MaxAge:   int(s.cfg.QueueTTL.Seconds()),
		HTTPOnly: true,
		SameSite: fiber.CookieSameSiteLaxMode,
		Secure:   s.cfg.CookieSecure || c.Protocol() == "https",
	})
	doc := s.statusDoc(room, st)
	doc.QueueToken = tok
	return c.JSON(doc)
}

// roomClaims verifies the queue token and that it belongs to the path's room.
func (s *Server) roomClaims(c *fiber.Ctx) (*Claims, string, error) {
	claims, err := s.queueClaims(c)
	if err != nil {
		return nil, "", err
	}
	room := c.Params("room")
	if claims.Room != room {
		return nil, "", errWrongRoom
	}
	return claims, room, nil
}

// position answers a poll: no BCrypt, no SQL, one Redis script.
func (s *Server) position(c *fiber.Ctx) error {
	claims, room, err := s.roomClaims(c)
	if err != nil {
		return err
	}
	st, err := s.q.Status(c.UserContext(), room, claims.Subject)
	if err != nil {
		return err
	}
	return c.JSON(s.statusDoc(room, st))
}

// leave gives up the caller's place or entry window.
func (s *Server) leave(c *fiber.Ctx) error {
	claims, room, err := s.roomClaims(c)
	if err != nil {
		return err
	}
	if _, err := s.q.Leave(c.UserContext(), room, claims.Subject); err != nil {
		return err
	}
	c.ClearCookie(queueCookie)
	return c.SendStatus(fiber.StatusNoContent)
}
