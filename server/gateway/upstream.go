package gateway

import (
	"fmt"
	"net"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"waitingroom/server/gateway/origin"
	"waitingroom/server/listener"
	"waitingroom/server/pass"
)

// The origin's client is package origin's; what the gateway adds to it is
// policy: the pass header it never lets a client send, the tunnels' caps
// counted per client address (listener.AddrKey: IPv4 address, IPv6 /64),
// the errors that are the request's fault, and the tunnels' metrics.

// NewUpstream returns the client of c's origin, with the pass header
// (pass.HeaderName) for the one a client's request may never carry. It
// does no I/O.
func NewUpstream(c origin.Config) (*origin.Client, error) {
	c.PassHeader = pass.HeaderName
	u, err := origin.New(c)
	if err != nil {
		return nil, fmt.Errorf("gateway: upstream URL: %w", err)
	}
	return u, nil
}

// refusals are the forward's errors that are the request's, not the
// origin's: answered in the contract's JSON, a pass kept, nothing learnt
// about the origin. close: the request's body may be left unread.
var refusals = []struct {
	err     error
	outcome string
	failure failure
	close   bool
}{
	{origin.ErrTooLarge, "too_large", failure{fasthttp.StatusRequestEntityTooLarge, "payload_too_large", "the request body is too large", 0}, true},
	{origin.ErrRequestBody, "bad_request", failure{fasthttp.StatusBadRequest, "invalid_request", "the request body could not be read", 0}, true},
	{origin.ErrBadUpgrade, "bad_request", failure{fasthttp.StatusBadRequest, "invalid_request", origin.ErrBadUpgrade.Error(), 0}, false},
	{origin.ErrTunnelsPerAddr, "tunnels_per_address", failure{fasthttp.StatusTooManyRequests, "rate_limited", "too many open WebSocket connections from your address; close some", 5}, false},
	{origin.ErrTunnelsTotal, "tunnels_total", failure{fasthttp.StatusServiceUnavailable, "unavailable", "too many open WebSocket connections; retry shortly", 5}, false},
}

// tunnelMetrics count the tunnels.
type tunnelMetrics struct {
	refused *prometheus.CounterVec
}

// newTunnelMetrics registers the tunnels' metrics with reg (nil: none):
// those u keeps (open now, closed idle) are read from it.
func newTunnelMetrics(reg prometheus.Registerer, u *origin.Client) tunnelMetrics {
	m := tunnelMetrics{
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waitingroom_gateway_tunnels_refused_total",
			Help: "WebSocket upgrades refused by a tunnel cap, by reason (per_address, total)."}, []string{"reason"}),
	}
	if reg != nil && u != nil {
		reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "waitingroom_gateway_tunnels",
				Help: "WebSocket connections joined to the origin, open now."}, func() float64 { return float64(u.Tunnels()) }),
			m.refused,
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "waitingroom_gateway_tunnels_idle_closed_total",
				Help: "Tunnels closed after the tunnel idle timeout with no byte either way."}, func() float64 { return float64(u.TunnelsIdleClosed()) }),
		)
	}
	return m
}

// tunnel asks the origin to join ctx's request (prepared) for client, its
// tunnels counted per listener.AddrKey; a cap's refusal is counted.
func (g *Gateway) tunnel(ctx *fasthttp.RequestCtx, client net.IP) (joined bool, err error) {
	joined, err = g.o.Upstream.Tunnel(ctx, listener.AddrKey(client), g.o.Identity.OwnCookie)
	switch err {
	case origin.ErrTunnelsPerAddr:
		g.tunnels.refused.WithLabelValues("per_address").Inc()
	case origin.ErrTunnelsTotal:
		g.tunnels.refused.WithLabelValues("total").Inc()
	}
	return joined, err
}
