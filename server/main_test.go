package server_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when any goroutine outlives the tests:
// every server, stream, hub and admission loop must stop completely.
// Two goroutines of fasthttp itself are ignored: its process-wide date
// updater, and its worker pool's cleaner, which notices a stopped server
// only after its idle period (10 s) and then exits.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
	)
}
