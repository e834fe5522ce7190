package listener

import (
	"net"
	"sync"
)

// AddrKey is the unit every per-address limit counts by: an IPv4 address as
// it is, an IPv6 address as its /64 prefix. A /64 is what one subscriber or
// one host is given, so rotating addresses inside it does not escape a
// limit; an IPv4-mapped IPv6 address counts as the IPv4 address. A nil or
// unparsable address is its own key ("unknown").
func AddrKey(ip net.IP) string {
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	if len(ip) != net.IPv6len {
		return "unknown"
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// NetKey names ip's network, the unit per-network limits count by: its
// /24 (IPv4) or /48 (IPv6); "unknown" for a nil or unparsable address.
func NetKey(ip net.IP) string {
	if v4 := ip.To4(); v4 != nil {
		return v4.Mask(net.CIDRMask(24, 32)).String() + "/24"
	}
	if len(ip) != net.IPv6len {
		return "unknown"
	}
	return ip.Mask(net.CIDRMask(48, 128)).String() + "/48"
}

// Counts counts what each address holds open, against a cap: the
// listener's connections per peer, and the server's streams per forwarded
// client behind a trusted proxy. The zero value is ready to use; it is safe
// for concurrent use.
type Counts struct {
	mu sync.Mutex
	m  map[string]int
}

// Acquire takes one of key's cap slots; false when all are taken.
func (a *Counts) Acquire(key string, cap int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]int{}
	}
	if a.m[key] >= cap {
		return false
	}
	a.m[key]++
	return true
}

// Release gives back a slot of key ("" is a no-op: not counted).
func (a *Counts) Release(key string) {
	if key == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m[key]--; a.m[key] <= 0 {
		delete(a.m, key)
	}
}
