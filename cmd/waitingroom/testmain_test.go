package main

import (
	"os"
	"strings"
	"testing"

	"waitingroom/cmd/waitingroom/systemtest"
)

// TestMain checks for leaked goroutines (systemtest.Run). With
// WR_TEST_MAIN=1 the test binary is instead the command itself, with the
// arguments in WR_TEST_ARGS (TestHelp).
func TestMain(m *testing.M) {
	if os.Getenv("WR_TEST_MAIN") == "1" {
		os.Args = append([]string{"waitingroom"}, strings.Fields(os.Getenv("WR_TEST_ARGS"))...)
		main()
		os.Exit(0)
	}
	systemtest.Run(m)
}
