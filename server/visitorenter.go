package server

import (
	"bytes"
	"errors"
	"log/slog"
	"math"
	"strings"

	"github.com/gofiber/fiber/v2"

	"waitingroom/queue"
	"waitingroom/server/api"
	"waitingroom/server/gateway"
	"waitingroom/server/listener"
	"waitingroom/server/pow"
	"waitingroom/server/ratelimit"
	"waitingroom/server/seclog"
)

// Anonymous enters (gateway mode). A visitor is free to mint: each enter
// without the wr_visitor cookie is a new one, so the per-user limit does
// not hold a bot back. What does, counted per room:
//
//	enter_user     every enter of one visitor (a reload storm)
//	enter_new_ip   new places from one address (IPv4, IPv6 /64)
//	enter_new_net  new places from one network (IPv4 /24, IPv6 /48)
//	pow            a solved challenge, its difficulty rising with the
//	               network's recent new places (pow.Rise)
//
// A visitor who already holds a place (waiting, pre-queued or admitted)
// and enters again — a reload, a second tab — counts only on enter_user
// and needs no new proof: the other three are conditional checks, which
// the enter script takes only for a user with no place
// (ratelimit.Check.Conditional). All four are one decision inside the
// enter script (enterInline): one script per enter. docs/security.md says
// why the numbers are what they are.

// powCheck names the proof's check among the enter limits.
const powCheck = "pow"

// anonymous reports whether user is a gateway mode visitor.
func (s *Server) anonymous(user string) bool {
	return s.gw != nil && strings.HasPrefix(user, visitorPrefix)
}

// visitorProof is what a visitor's enter carried for the proof of work.
type visitorProof struct {
	p     pow.Proof
	err   error // nil: checked and spent; else ErrRequired or ErrInvalid
	spent bool
}

// enterAnonymous enters a visitor under the limits above, and the room's
// proof of work.
func (s *Server) enterAnonymous(c *fiber.Ctx, room, user string) (queue.Status, error) {
	ctx := c.UserContext()
	var checks []ratelimit.Check
	if s.rl.Applies(c, user) {
		checks = s.visitorLimits(c, room, user)
	}
	var proof *visitorProof
	if s.needsChallenge(room, user) {
		var err error
		if proof, err = s.proofOf(c, room, user); err != nil {
			return queue.Status{}, err
		}
		checks = append(checks, s.powCheckOf(c, room, proof))
	}
	if len(checks) == 0 {
		return s.q.Enter(ctx, room, user)
	}
	bypass := s.acl.Current().Bypass.HasUser(user)
	if !bypass {
		if st, ok, err := s.enterInline(c, room, user, checks, proof); ok {
			return st, err
		}
	}
	// A Cluster, or the bypass list: the checks first (the conditional
	// ones only for a visitor without a place), then the entry.
	switch _, err := s.q.Status(ctx, room, user); {
	case err == nil:
		checks = unconditional(checks)
	case !errors.Is(err, queue.ErrNotInQueue):
		return queue.Status{}, err
	}
	rs, err := s.limiter.Take(ctx, checks...)
	switch {
	case errors.Is(err, ratelimit.ErrUnavailable) && proof == nil:
		// enter's limits fail open; a proof of work fails closed
	case err != nil:
		return queue.Status{}, errors.Join(api.ErrUnavailable, err)
	default:
		if err := s.enterRefused(c, room, checks, rs, proof); err != nil {
			return queue.Status{}, err
		}
	}
	return s.enterOrGrant(c, room, user, bypass)
}

// visitorLimits are a visitor's enter limits in room.
func (s *Server) visitorLimits(c *fiber.Ctx, room, user string) []ratelimit.Check {
	return []ratelimit.Check{
		{Name: "enter_user", Subject: user, Limit: s.cfg.Limits.EnterUser},
		{Name: "enter_new_ip", Subject: room + ":" + s.clientKey(c), Limit: s.cfg.Limits.EnterNewIP, Conditional: true},
		s.netCheck(c, room),
	}
}

// netCheck is the per-network limit on new places in room.
func (s *Server) netCheck(c *fiber.Ctx, room string) ratelimit.Check {
	return ratelimit.Check{Name: "enter_new_net", Subject: room + ":" + listener.NetKey(s.clientAddr(c)),
		Limit: s.cfg.Limits.EnterNewNet, Conditional: true}
}

// unconditional is checks without the conditional ones.
func unconditional(checks []ratelimit.Check) []ratelimit.Check {
	var out []ratelimit.Check
	for _, ch := range checks {
		if !ch.Conditional {
			out = append(out, ch)
		}
	}
	return out
}

// proofOf reads and checks the proof an enter carries, and spends it
// when it holds (a replay then counts as no proof). Only a malformed body
// (400) or Redis unable to spend (503) is an error: a missing or refused
// proof is judged with the entry (a visitor with a place needs none).
func (s *Server) proofOf(c *fiber.Ctx, room, user string) (*visitorProof, error) {
	var req challengeRequest
	if len(bytes.TrimSpace(c.Body())) > 0 {
		if err := api.Decode(c, &req); err != nil {
			return nil, err
		}
	}
	pr := &visitorProof{}
	if pr.p, pr.err = s.pow.Check(room, user, req.Challenge, req.Solution); pr.err != nil {
		return pr, nil
	}
	switch err := s.pow.Spend(c.UserContext(), pr.p); {
	case errors.Is(err, pow.ErrUnavailable):
		return nil, errors.Join(api.ErrUnavailable, err)
	case err != nil:
		pr.err = err
	default:
		pr.spent = true
	}
	return pr, nil
}

// powCheckOf is the proof's check: the network's count of new places
// (enter_new_net's) judged against the burst the proof's difficulty pays
// for (pow.Burst); no proof pays for none.
func (s *Server) powCheckOf(c *fiber.Ctx, room string, proof *visitorProof) ratelimit.Check {
	ch := s.netCheck(c, room)
	ch.Name, ch.Of, ch.PeekOnly = powCheck, "enter_new_net", true
	ch.Limit.Burst = 0
	if proof.err == nil {
		ch.Limit.Burst = pow.Burst(proof.p.Difficulty, s.gwSettings.Get(room).Difficulty)
	}
	return ch
}

// powDifficulty is the difficulty a challenge of room asks of this
// request's network: the room's, plus pow.Rise of the network's count (read
// without recording). Without the count (rate limits off, Redis down) it
// is the room's.
func (s *Server) powDifficulty(c *fiber.Ctx, room string) int {
	base := s.gwSettings.Get(room).Difficulty
	if !s.rl.Applies(c, "") {
		return base
	}
	ch := s.netCheck(c, room)
	rs, err := s.limiter.Peek(c.UserContext(), ch)
	if err != nil {
		return base
	}
	level := math.Ceil(float64(rs[0].Debt) / float64(ch.Limit.Interval()))
	return min(base+pow.Rise(level), pow.MaxDifficulty)
}

// enterRefused answers a refused enter decision rs on checks: a rate
// limit's 429 before a refused proof of work's 403. A proof spent on an
// enter a limit refused is given back, to be sent again after the wait.
func (s *Server) enterRefused(c *fiber.Ctx, room string, checks []ratelimit.Check, rs []ratelimit.Result, proof *visitorProof) error {
	limits := make([]ratelimit.Result, len(rs))
	powRefused, refused := false, false
	for i, r := range rs {
		limits[i] = r
		switch {
		case r.Allowed:
		case checks[i].Name == powCheck:
			powRefused, limits[i].Allowed = true, true
		default:
			refused = true
		}
	}
	if !refused && !powRefused {
		return nil
	}
	if proof != nil && proof.spent {
		_ = s.pow.Unspend(c.UserContext(), proof.p)
	}
	if refused {
		return s.rl.Refused(c, checks, limits)
	}
	reason := "difficulty"
	switch {
	case errors.Is(proof.err, pow.ErrRequired):
		return errChallengeRequired
	case proof.err != nil:
		reason = pow.Reason(proof.err)
	}
	s.sec.Event(c.UserContext(), seclog.ChallengeRefused, slog.String("address", s.clientIP(c)),
		slog.String("room", room), slog.String("reason", reason))
	return errChallengeInvalid
}

// needsChallenge reports whether user's enter of room is under a proof of
// work: an anonymous visitor in gateway mode, in a room whose challenge is
// pow.
func (s *Server) needsChallenge(room, user string) bool {
	return s.anonymous(user) && s.gwSettings.Get(room).Challenge == gateway.ChallengePoW
}
