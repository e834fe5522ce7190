package server

import (
	"net"
	"strconv"
	"sync"

	"github.com/gofiber/fiber/v2"

	"waitingroom/server/api"
	"waitingroom/server/listener"
)

// listenerConfig is the public listener's configuration: the caps and
// deadline from Config, and the server's metrics, exemptions and log.
func (s *Server) listenerConfig() listener.Config {
	c := s.cfg.Listener
	c.Exempt = s.connExempt
	c.Refused = func(reason string) { s.m.ConnRefused.WithLabelValues(reason).Inc() }
	c.IdleClosed = s.m.IdleClosed.Inc
	c.Logger = s.log
	return c
}

// connExempt says which peers the listener does not cap per address:
// trusted proxies (their connections carry many clients; each forwarded
// client's streams are counted by holdStream instead) and addresses on the
// access allow list.
func (s *Server) connExempt(ip net.IP) bool {
	if len(s.cfg.TrustedProxies) > 0 && s.clients.Trusted(ip) {
		return true
	}
	a := &s.acl.Current().Allow
	return a.HasIP(ip)
}

// streamAddrLimit is the label of a forwarded client's stream refusal in
// waitingroom_rate_limited_total.
const streamAddrLimit = "streams_per_address"

// holdStream counts a stream about to start against its client address's
// cap (Config.Listener.PerAddr) when the request came through a trusted
// proxy: the listener cannot tell that proxy's clients apart, so a client
// behind it could otherwise hold any number of streams. The key is the
// forwarded address (clientKey: IPv6 per /64); an address on the allow list
// is not counted. Direct clients are already capped per connection by the
// listener. A refusal comes before the stream starts, as JSON: 429
// rate_limited with Retry-After — at the HTTP layer this is a limit on one
// client like the others of layer 1 (a 503 would read as an outage in the
// route metrics and alerts). The returned release gives the slot back (call
// it once, when the stream ends; a no-op when nothing was counted).
func (s *Server) holdStream(c *fiber.Ctx) (release func(), err error) {
	if len(s.cfg.TrustedProxies) == 0 || s.cfg.Listener.PerAddr <= 0 || !s.clients.Trusted(c.Context().RemoteIP()) {
		return func() {}, nil
	}
	addr := s.clientAddr(c)
	if s.acl.Current().Allow.HasIP(addr) {
		return func() {}, nil
	}
	key := listener.AddrKey(addr)
	if !s.fwdStreams.Acquire(key, s.cfg.Listener.PerAddr) {
		s.m.RateLimited.WithLabelValues(streamAddrLimit).Inc()
		return nil, &api.Error{Status: fiber.StatusTooManyRequests, Code: "rate_limited",
			Message:    "too many open streams from your address (at most " + strconv.Itoa(s.cfg.Listener.PerAddr) + "); close some, or poll",
			RetryAfter: 5}
	}
	return sync.OnceFunc(func() { s.fwdStreams.Release(key) }), nil
}
