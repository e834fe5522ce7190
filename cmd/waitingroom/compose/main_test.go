package compose

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when any goroutine outlives its tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
