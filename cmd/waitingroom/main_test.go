package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func run(t *testing.T, args string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// No configuration at all: help must not need any (nor touch Redis or Postgres).
	cmd.Env = []string{"WR_TEST_MAIN=1", "WR_TEST_ARGS=" + args, "PATH=" + os.Getenv("PATH")}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// TestHelp: --help (and -h, help; of serve and seed too) prints the usage
// to stdout and exits 0 without an ERROR line; a wrong flag or command
// still fails.
func TestHelp(t *testing.T) {
	for args, want := range map[string]string{
		"--help": "waitingroom seed", "-h": "waitingroom seed", "help": "waitingroom seed",
		"serve --help": "-admin", "serve -h": "-http", "seed --help": "-users", "seed -h": "-stock",
	} {
		stdout, stderr, code := run(t, args)
		if code != 0 || !strings.Contains(stdout, "Usage") || !strings.Contains(stdout, want) || strings.Contains(stderr, "ERROR") {
			t.Errorf("waitingroom %s: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	for _, args := range []string{"serve --bogus", "frobnicate"} {
		if _, stderr, code := run(t, args); code != 1 || !strings.Contains(stderr, "Usage") {
			t.Errorf("waitingroom %s: exit %d, stderr %q: want 1 with the usage", args, code, stderr)
		}
	}
}

// TestListenFailureNamesVariable: an address the instance cannot listen
// on stops it with a message naming that address's variable (the server
// names only its option). A gateway on Redis alone, whose Redis and
// origin point nowhere: nothing else is needed to reach the listening.
func TestListenFailureNamesVariable(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { taken.Close() })
	for _, v := range []string{"WR_HTTP_ADDR", "WR_ADMIN_ADDR"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel() // each waits a few seconds for the Redis that is not there
			env := map[string]string{"WR_DEV": "1", "WR_UPSTREAM": "http://127.0.0.1:9", "REDIS_URL": "redis://127.0.0.1:1/0",
				"WR_HTTP_ADDR": "127.0.0.1:0", "WR_ADMIN_ADDR": "127.0.0.1:0", v: taken.Addr().String()}
			stderr, code := commandRun(t, env, "serve")
			if code != 1 || !strings.Contains(stderr, v+": server: listen on the") || !strings.Contains(stderr, taken.Addr().String()) {
				t.Errorf("%s taken: exit %d, stderr %q; want 1 and a message naming %s and the address", v, code, stderr, v)
			}
		})
	}
}
