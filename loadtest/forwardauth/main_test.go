package forwardauth

import (
	"os"
	"testing"

	"waitingroom/loadtest/internal/smoke"
)

func TestMain(m *testing.M) { os.Exit(smoke.Main(m)) }
