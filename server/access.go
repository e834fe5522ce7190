package server

import (
	"github.com/gofiber/fiber/v2"

	"waitingroom/server/access"
	"waitingroom/server/api"
)

// The access lists (package access: deny, allow, bypass, shared through
// Redis and checked in memory) at the HTTP layer: the checks that refuse
// and exempt requests (the admin API that reads and replaces them is
// package admin's).

var errDenied = &api.Error{Status: fiber.StatusForbidden, Code: "denied", Message: "access denied"}

// denyIPs refuses denied addresses before any work.
func (s *Server) denyIPs(c *fiber.Ctx) error {
	if d := &s.acl.Current().Deny; d.HasNets() && d.HasIP(s.clientAddr(c)) {
		return errDenied
	}
	return c.Next()
}

// checkUser refuses denied users.
func (s *Server) checkUser(user string) error { return deniedUser(s.acl, user) }

// deniedUser is errDenied for a user on acl's deny list, else nil.
func deniedUser(acl *access.Lists, user string) error {
	if acl.Current().Deny.HasUser(user) {
		return errDenied
	}
	return nil
}

// exempt reports whether the request's address or user is on the allow list.
func (s *Server) exempt(c *fiber.Ctx, user string) bool {
	a := &s.acl.Current().Allow
	return (user != "" && a.HasUser(user)) || (a.HasNets() && a.HasIP(s.clientAddr(c)))
}
