package poll

import (
	"os"
	"testing"

	"waitingroom/loadtest/internal/smoke"
)

func TestMain(m *testing.M) {
	// The test binary serves as the plain handler's process too (poll
	// --baseline-process starts os.Executable()).
	if len(os.Args) > 1 && os.Args[1] == PlainHandlerCmd {
		os.Exit(PlainHandlerMain())
	}
	os.Exit(smoke.Main(m))
}
