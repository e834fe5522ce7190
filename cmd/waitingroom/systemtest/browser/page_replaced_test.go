package browser

import (
	"testing"

	"waitingroom/cmd/waitingroom/systemtest"
)

// TestPageStreamReplacedPolls: the page's stream is replaced by newer ones
// of the same user (another browser or device, here the API); the page does
// not reopen a stream — it would take one back, and the two would take
// turns — but polls at its band's pace, says nothing alarming, keeps its
// place and reaches READY.
func TestPageStreamReplacedPolls(t *testing.T) {
	systemtest.Parallel(t)
	b := newBrowser(t)
	_, in := pageEnv(t, nil)
	first := in.Enter(systemtest.User(1), "default").Str("queueToken")
	p := b.tab(in)
	p.open("/?room=default")
	p.signIn(systemtest.User(2))
	p.click("#enter-btn")
	p.waitPosition(2)
	p.waitJS("tier sse", `document.getElementById('tier').dataset.tier === 'sse'`)
	systemtest.WaitFor(t, "the page's stream", func() bool { return in.StreamsOpen("sse") == 1 })

	// The same user elsewhere: enter again (the same place) and open three
	// streams; the page's, the oldest, is replaced.
	mine := in.Enter(systemtest.User(2), "default").Str("queueToken")
	for range 3 {
		systemtest.OpenSSE(t, in, "default", mine).Next(t)
	}
	p.waitJS("polling after the replacement", `document.getElementById('tier').dataset.tier === 'poll'`)
	if got := p.text("message"); got != "" {
		t.Errorf("message after the replacement = %q, want none", got)
	}
	p.waitPosition(2)

	in.SetTarget("default", 1)
	p.waitPosition(1)
	in.OrderWhenReady("default", first)
	in.SetTarget("default", 2)
	p.waitJS("READY", shown("ready"))
	if got := in.Metric("waitingroom_stream_replaced_total"); got != 1 {
		t.Fatalf("streams replaced = %v, want 1: the page opened a stream again", got)
	}
	if got := in.StreamsOpen(""); got != 3 {
		t.Fatalf("streams open = %v, want the 3 newer ones", got)
	}
}
