package server

import (
	"net"

	"github.com/gofiber/fiber/v2"

	"waitingroom/server/listener"
)

// clientKey is listener.AddrKey of the request's client address (clientIP): the
// subject of per-address rate limits.
func (s *Server) clientKey(c *fiber.Ctx) string { return listener.AddrKey(net.ParseIP(s.clientIP(c))) }
