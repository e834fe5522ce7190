package forwardauth

import (
	"flag"
	"io"
	"os"
	"os/exec"
	"slices"
	"testing"
)

// TestRender: only the variables named are replaced; nginx's own stay.
func TestRender(t *testing.T) {
	got := render("listen ${LISTEN_ADDR}; proxy_set_header X-Original-URI $request_uri; ${OTHER} $LISTEN_ADDR",
		map[string]string{"LISTEN_ADDR": "127.0.0.1:1"})
	if want := "listen 127.0.0.1:1; proxy_set_header X-Original-URI $request_uri; ${OTHER} $LISTEN_ADDR"; got != want {
		t.Errorf("render: %q, want %q", got, want)
	}
}

func TestForwardAuthFlags(t *testing.T) {
	parse := func(args ...string) (faConfig, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c := faFlags(fs)
		if err := fs.Parse(args); err != nil {
			return faConfig{}, err
		}
		return c()
	}
	if c, err := parse("--conns", "8"); err != nil || c.visitors != 8 {
		t.Errorf("--visitors by default: %d (%v), want one per connection", c.visitors, err)
	}
	for _, bad := range [][]string{{"--conns", "0"}, {"--duration", "0s"}, {"--visitors", "-1"}, {"--redis-db", "-1"}} {
		if _, err := parse(bad...); err == nil {
			t.Errorf("%v: accepted, want an error", bad)
		}
	}
}

// TestStatTicks reads a child's line of /proc and finds its parent, this
// test.
func TestStatTicks(t *testing.T) {
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if _, ppid, err := statTicks(cmd.Process.Pid); err != nil || ppid != os.Getpid() {
		t.Fatalf("statTicks(child): ppid %d, %v; want %d", ppid, err, os.Getpid())
	}
	if got := childrenOf(os.Getpid()); !slices.Contains(got, cmd.Process.Pid) {
		t.Errorf("childrenOf(this test) = %v, want %d among them", got, cmd.Process.Pid)
	}
	if got := childrenOf(cmd.Process.Pid); len(got) != 0 {
		t.Errorf("childrenOf(sleep) = %v, want none", got)
	}
}
