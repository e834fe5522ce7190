package server

import (
	"net"
	"testing"
)

func TestAddrKey(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"198.51.100.7", "198.51.100.7"},
		{"::ffff:198.51.100.7", "198.51.100.7"},
		{"2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"},
		{"2001:db8:1:2::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
		{"::1", "::/64"},
		{"", "unknown"},
	} {
		if got := addrKey(net.ParseIP(tc.in)); got != tc.want {
			t.Errorf("addrKey(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
