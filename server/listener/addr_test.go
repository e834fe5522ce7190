package listener_test

import (
	"net"
	"testing"

	"waitingroom/server/listener"
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
		if got := listener.AddrKey(net.ParseIP(tc.in)); got != tc.want {
			t.Errorf("AddrKey(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCounts(t *testing.T) {
	var c listener.Counts
	if !c.Acquire("a", 2) || !c.Acquire("a", 2) {
		t.Fatal("two slots of a cap of 2: want both taken")
	}
	if c.Acquire("a", 2) {
		t.Fatal("a third slot of a cap of 2: want refused")
	}
	if !c.Acquire("b", 2) {
		t.Fatal("another key: want its own slots")
	}
	c.Release("a")
	c.Release("") // not counted: a no-op
	if !c.Acquire("a", 2) {
		t.Fatal("after a release: want a slot again")
	}
}
