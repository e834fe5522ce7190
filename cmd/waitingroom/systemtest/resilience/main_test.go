package resilience

import (
	"testing"

	"waitingroom/cmd/waitingroom/systemtest"
)

// TestMain checks for leaked goroutines and serves as a child server
// process (systemtest.Run).
func TestMain(m *testing.M) { systemtest.Run(m) }
