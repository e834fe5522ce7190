package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBadLogSettingStopsTheCommand: the command refuses a bad log setting
// before anything else, naming it — in JSON, as stderr is no terminal.
func TestBadLogSettingStopsTheCommand(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{"WR_TEST_MAIN=1", "WR_TEST_ARGS=help", "WR_LOG_LEVEL=loud", "PATH=" + os.Getenv("PATH")}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit = %v, want 1", err)
	}
	var line map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(stderr.Bytes()), &line); err != nil {
		t.Fatalf("stderr is not one JSON line: %q", stderr.String())
	}
	if msg, _ := line["msg"].(string); line["level"] != "ERROR" || !strings.Contains(msg, "WR_LOG_LEVEL") {
		t.Fatalf("stderr = %v, want an ERROR naming WR_LOG_LEVEL", line)
	}
}
