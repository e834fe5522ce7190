package server

import (
	"errors"
	"testing"
	"time"
)

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
