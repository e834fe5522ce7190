package main

import (
	"testing"
)

// TestPageStreamReplacedPolls: the page's stream is replaced by newer ones
// of the same user (another browser or device, here the API); the page does
// not reopen a stream — it would take one back, and the two would take
// turns — but polls at its band's pace, says nothing alarming, keeps its
// place and reaches READY.
func TestPageStreamReplacedPolls(t *testing.T) {
	parallel(t)
	b := newBrowser(t)
	_, in := pageEnv(t, nil)
	first := in.enter(user(1), "default").str("queueToken")
	p := b.tab(in)
	p.open("/?room=default")
	p.signIn(user(2))
	p.click("#enter-btn")
	p.waitPosition(2)
	p.waitJS("tier sse", `document.getElementById('tier').dataset.tier === 'sse'`)
	waitFor(t, "the page's stream", func() bool { return in.streamsOpen("sse") == 1 })

	// The same user elsewhere: enter again (the same place) and open three
	// streams; the page's, the oldest, is replaced.
	mine := in.enter(user(2), "default").str("queueToken")
	for range 3 {
		openSSE(t, in, "default", mine).next(t)
	}
	p.waitJS("polling after the replacement", `document.getElementById('tier').dataset.tier === 'poll'`)
	if got := p.text("message"); got != "" {
		t.Errorf("message after the replacement = %q, want none", got)
	}
	p.waitPosition(2)

	in.setTarget("default", 1)
	p.waitPosition(1)
	in.orderWhenReady("default", first)
	in.setTarget("default", 2)
	p.waitJS("READY", shown("ready"))
	if got := in.metric("waitingroom_stream_replaced_total"); got != 1 {
		t.Fatalf("streams replaced = %v, want 1: the page opened a stream again", got)
	}
	if got := in.streamsOpen(""); got != 3 {
		t.Fatalf("streams open = %v, want the 3 newer ones", got)
	}
}
