package poll

import (
	"strings"
	"testing"

	"waitingroom/loadtest/internal/scenario"
)

// TestLimitFlags: --limit wants minted tokens and the server's Redis,
// measures the poll at the front with both yardsticks in processes of
// their own, and refuses what would change what it measures.
func TestLimitFlags(t *testing.T) {
	base := []string{"--limit", "--mint-tokens", "--jwt-secret", strings.Repeat("s", 32), "--redis", "redis://127.0.0.1:1/0"}
	var o scenario.Options
	cfg, err := parsePollFlags(&o, base)
	if err != nil {
		t.Fatal(err)
	}
	cfg.rs.Close()
	if !cfg.limit.on || cfg.ahead != 0 || !cfg.ownProcess || cfg.conns != 64 {
		t.Fatalf("config %+v: want --limit at the front (ahead 0), yardsticks in processes of their own, 64 conns", cfg)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--limit", "--redis", "redis://127.0.0.1:1/0"}, "--mint-tokens"},
		{base[:4], "--redis"},
		{append(base[:len(base):len(base)], "--ahead", "200"), "--ahead"},
		{append(base[:len(base):len(base)], "--mode", "open"), "closed loop"},
		{append(base[:len(base):len(base)], "--enter-conns", "256"), "--enter-conns"},
		{[]string{"--cpu-profile", "x.pprof"}, "--cpu-profile goes with --limit"},
	} {
		var o scenario.Options
		if _, err := parsePollFlags(&o, c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("parsePollFlags(%q) = %v, want an error about %s", c.args, err, c.want)
		}
	}
}
