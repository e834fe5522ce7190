// Package crowdnet is the client side of a crowd: its users dealt to
// loopback source addresses, each address with its own API client and
// stream dialers. The tool's source addresses never overlap: the shared
// dialer's 127.0.0.2–127.0.0.17, crowds' 127.1.x.y, the attack scenario's
// 127.2.x.y and 127.3.0.1, gateway-attack's 127.6.x.y.
package crowdnet

import (
	"fmt"
	"net"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/stream"
)

// maxCrowdAddrs is how many source addresses a crowd can spread over:
// 127.1.0.1 … 127.1.255.254.
const maxCrowdAddrs = 256 * 254

// Crowd is the client side of a surge's users. Without perAddr every user
// shares one API client and the stream dialers that spread connections over
// the tool's 16 source addresses (the surge as it always ran). With perAddr
// k, users are dealt k to a source address — user i to group i÷k, from
// 127.1.0.1, 127.1.0.2, … — and each group has its own http.Transport and
// stream dialers bound to that address, so a group's connections never mix
// with another's: a real sale's crowd comes from many addresses, a few users
// (a household, an office's NAT) behind each, and per-address defences
// (rate limits, connection caps) then meet the crowd as they would in
// production. The attack scenario's attackers use 127.2.0.x and 127.3.0.x,
// disjoint from every crowd address.
type Crowd struct {
	perAddr int
	groups  []*Group
}

// Group is the clients of one source address.
type Group struct {
	API    *client.API
	Dialer map[string]*stream.Dialer // "sse", "ws"
}

// legitAddr is crowd group g's source address.
func legitAddr(g int) net.IP { return net.IPv4(127, 1, byte(g/254), byte(g%254+1)) }

// New builds the clients of n users, perAddr to an address (0: all
// share one client); every request is recorded in rec.
func New(base, room string, timeout, idle time.Duration, n, perAddr int, rec *measure.Recorder) (*Crowd, error) {
	shared := map[string]*stream.Dialer{}
	for _, t := range []string{"sse", "ws"} {
		d, err := stream.NewDialer(t, base, room, timeout, idle)
		if err != nil {
			return nil, err
		}
		shared[t] = d
	}
	c := &Crowd{perAddr: perAddr}
	if perAddr <= 0 {
		c.groups = []*Group{{API: &client.API{Base: base, Room: room, HTTP: client.New(1024, timeout), Rec: rec}, Dialer: shared}}
		return c, nil
	}
	if err := client.CheckLoopback(base); err != nil {
		return nil, fmt.Errorf("--users-per-addr: %w", err)
	}
	groups := (n + perAddr - 1) / perAddr
	if groups > maxCrowdAddrs {
		return nil, fmt.Errorf("--users-per-addr %d: %d users need %d source addresses, at most %d: raise it", perAddr, n, groups, maxCrowdAddrs)
	}
	for g := range groups {
		ip := legitAddr(g)
		dial := client.DialFrom(ip)
		c.groups = append(c.groups, &Group{
			API:    &client.API{Base: base, Room: room, HTTP: client.NewFrom(ip, perAddr, timeout), Rec: rec},
			Dialer: map[string]*stream.Dialer{"sse": shared["sse"].From(dial), "ws": shared["ws"].From(dial)},
		})
	}
	return c, nil
}

// Of is user i's group.
func (c *Crowd) Of(i int) *Group {
	if c.perAddr <= 0 {
		return c.groups[0]
	}
	return c.groups[i/c.perAddr]
}

// Addrs is how many source addresses the crowd uses (0: the shared pool).
func (c *Crowd) Addrs() int {
	if c.perAddr <= 0 {
		return 0
	}
	return len(c.groups)
}

// CloseIdle closes every group's idle keep-alive connections: they would
// hold up a server's graceful shutdown, and a second run starts cold.
func (c *Crowd) CloseIdle() {
	for _, g := range c.groups {
		g.API.HTTP.CloseIdleConnections()
	}
}
