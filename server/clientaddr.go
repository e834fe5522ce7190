package server

import (
	"net"

	"github.com/gofiber/fiber/v2"
)

// clientKey is the key of the request's client address (client.Resolver.Key):
// the subject of per-address rate limits.
func (s *Server) clientKey(c *fiber.Ctx) string { return s.clients.Key(c.Context()) }

// clientIP is the request's client address (clientAddr) as text.
func (s *Server) clientIP(c *fiber.Ctx) string { return s.clients.IP(c.Context()) }

// clientAddr is the socket's peer, unless that peer is a trusted proxy
// (Config.TrustedProxies) that names the client in Config.ClientIPHeader
// (client.Resolver.Addr).
func (s *Server) clientAddr(c *fiber.Ctx) net.IP { return s.clients.Addr(c.Context()) }
