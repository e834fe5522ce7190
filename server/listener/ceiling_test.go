package listener

import "testing"

func TestCeilingFor(t *testing.T) {
	for _, tc := range []struct{ nofile, reserved, want int }{
		{20000, 76, 19412}, // this machine's hard limit: margin 512
		{1024, 76, 884},    // margin 64
		{300, 76, 160},
		{100, 76, 1}, // never zero: fasthttp would read 0 as "default"
	} {
		if got := ceilingFor(tc.nofile, tc.reserved); got != tc.want {
			t.Errorf("ceilingFor(%d, %d) = %d, want %d", tc.nofile, tc.reserved, got, tc.want)
		}
	}
}

func TestPerAddressCap(t *testing.T) {
	for _, tc := range []struct{ maxConns, want int }{
		{19412, 970}, // the ceiling at 20,000 descriptors
		{300, 15},
		{100, 8}, // never below a browser's ~6 connections per host
		{1, 8},
	} {
		if got := PerAddressCap(tc.maxConns); got != tc.want {
			t.Errorf("PerAddressCap(%d) = %d, want %d", tc.maxConns, got, tc.want)
		}
	}
}
