package server

import (
	"net"

	"github.com/gofiber/fiber/v2"
)

// addrKey is the unit every per-address limit counts by: an IPv4 address as
// it is, an IPv6 address as its /64 prefix. A /64 is what one subscriber or
// one host is given, so rotating addresses inside it does not escape a
// limit; an IPv4-mapped IPv6 address counts as the IPv4 address. A nil or
// unparsable address is its own key ("unknown").
func addrKey(ip net.IP) string {
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	if len(ip) != net.IPv6len {
		return "unknown"
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// clientKey is addrKey of the request's client address (clientIP): the
// subject of per-address rate limits.
func (s *Server) clientKey(c *fiber.Ctx) string { return addrKey(net.ParseIP(s.clientIP(c))) }
