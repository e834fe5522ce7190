package server

import (
	"errors"
	"testing"
	"time"
)

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

func TestHoardingConfig(t *testing.T) {
	env := func(vars map[string]string) func(string) string {
		return func(k string) string {
			if k == "WR_DEV" {
				return "1"
			}
			return vars[k]
		}
	}
	c, err := LoadConfig(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxConnsPerIP != 0 || c.FirstRequestTimeout != 5*time.Second || c.MaxStreamsPerUser != 3 {
		t.Fatalf("defaults: per IP %d (0: derived), first request %v, streams per user %d; want 0, 5s, 3",
			c.MaxConnsPerIP, c.FirstRequestTimeout, c.MaxStreamsPerUser)
	}
	for name, bad := range map[string]string{"WR_MAX_CONNS_PER_IP": "-1", "WR_FIRST_REQUEST_TIMEOUT": "10ms", "WR_MAX_STREAMS_PER_USER": "many"} {
		_, err := LoadConfig(env(map[string]string{name: bad}))
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Var != name {
			t.Errorf("%s=%s: %v, want a ConfigError naming it", name, bad, err)
		}
	}
}
