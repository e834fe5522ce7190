package stream_test

import (
	"context"
	"testing"

	"waitingroom/stream"
)

// TestShutdownIsNoOutage: a resync cut by the hub's own shutdown (its
// context cancelled) is not a Redis outage: streams are not told Redis is
// down and nothing is logged as such (every graceful shutdown did).
func TestShutdownIsNoOutage(t *testing.T) {
	f := newFixture(t, stream.Options{})
	f.subscribe("u1") // the hub now re-reads room r1
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f.hub.Resync(ctx)
	if down, _ := f.hub.Outage(); down {
		t.Fatal("a resync cut by the shutdown marked Redis as unreachable")
	}
	// A real failure still counts: a closed client is an outage.
	f.rdb.Close()
	f.hub.Resync(context.Background())
	if down, _ := f.hub.Outage(); !down {
		t.Fatal("a failed resync did not mark Redis as unreachable")
	}
}
