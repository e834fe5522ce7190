package server

import (
	"errors"
	"log/slog"

	"github.com/gofiber/fiber/v2"

	"waitingroom/server/access"
	"waitingroom/server/api"
)

// The access lists (package access: deny, allow, bypass, shared through
// Redis and checked in memory) at the HTTP layer: the checks that refuse
// and exempt requests, and the admin API that reads and replaces them.

var errDenied = &api.Error{Status: fiber.StatusForbidden, Code: "denied", Message: "access denied"}

// denyIPs refuses denied addresses before any work.
func (s *Server) denyIPs(c *fiber.Ctx) error {
	if d := &s.acl.Current().Deny; d.HasNets() && d.HasIP(s.clientAddr(c)) {
		return errDenied
	}
	return c.Next()
}

// checkUser refuses denied users.
func (s *Server) checkUser(user string) error {
	if s.acl.Current().Deny.HasUser(user) {
		return errDenied
	}
	return nil
}

// exempt reports whether the request's address or user is on the allow list.
func (s *Server) exempt(c *fiber.Ctx, user string) bool {
	a := &s.acl.Current().Allow
	return (user != "" && a.HasUser(user)) || (a.HasNets() && a.HasIP(s.clientAddr(c)))
}

// accessDoc is the admin API's view of the lists.
type accessDoc struct {
	Deny   []string `json:"deny"`
	Allow  []string `json:"allow"`
	Bypass []string `json:"bypass"`
}

func (s *Server) adminGetAccess(c *fiber.Ctx) error {
	if err := s.acl.Load(c.UserContext()); err != nil {
		return errors.Join(api.ErrUnavailable, err)
	}
	a := s.acl.Current()
	return c.JSON(accessDoc{Deny: a.Deny.Entries(), Allow: a.Allow.Entries(), Bypass: a.Bypass.Entries()})
}

// adminPutAccess replaces the lists given in the body (absent lists stay).
func (s *Server) adminPutAccess(c *fiber.Ctx) error {
	var req struct {
		Deny   *[]string `json:"deny"`
		Allow  *[]string `json:"allow"`
		Bypass *[]string `json:"bypass"`
	}
	if err := api.DecodeStrict(c, &req); err != nil {
		return err
	}
	ctx := c.UserContext()
	if err := s.acl.Replace(ctx, access.Update{Deny: req.Deny, Allow: req.Allow, Bypass: req.Bypass}); err != nil {
		var ee *access.EntryError
		if errors.As(err, &ee) {
			return api.BadRequest(ee.Error())
		}
		return errors.Join(api.ErrUnavailable, err)
	}
	s.log.LogAttrs(ctx, slog.LevelWarn, "access lists changed by admin",
		slog.Any("deny", req.Deny), slog.Any("allow", req.Allow), slog.Any("bypass", req.Bypass))
	return s.adminGetAccess(c)
}
