package push

import (
	"waitingroom/stream"
)

// writer is one transport's side of a stream.
type writer interface {
	send(u stream.Update) bool // writes one update; false ends the stream
	keepAlive() bool           // SSE heartbeat comment, WebSocket ping
	closed() bool              // whether the client has gone (asked every livenessEvery)
	degraded(down bool) bool   // tells the client Redis is (no longer) unreachable
	ended()                    // the hub ended the stream without a last word
}

// pump delivers sub's updates and chores through w until the stream ends:
// the client leaves (or gone is closed), a write fails, the hub ends it
// (gone, reconnect, stalled) or the queue token expires (gone). It holds
// no timer: keep-alives, liveness checks and the expiry are the hub's
// chores (Sub.Schedule), handed out on its sweeps. While it waits, its
// small frame is the top of the goroutine's stack (the writing happens in
// deliver's callees), so the stack can shrink back between updates.
func pump(sub *stream.Sub, w writer, gone <-chan struct{}) {
	down, outage := sub.Outage()
	if !deliver(sub, w) || down && !w.degraded(true) {
		return
	}
	for {
		select {
		case <-sub.Notify():
			if !deliver(sub, w) {
				return
			}
		case <-sub.Done():
			lastWord(sub, w)
			return
		case <-outage:
			var now bool
			if now, outage = sub.Outage(); now != down {
				if down = now; !w.degraded(down) {
					return
				}
			}
		case <-gone:
			return
		}
	}
}

// lastWord writes the update the hub left when it ended the stream, if
// any. Not inlined: see deliver.
//
//go:noinline
func lastWord(sub *stream.Sub, w writer) {
	if u, ok := sub.Take(); ok {
		w.send(u)
	} else {
		w.ended()
	}
}

// deliver writes sub's waiting update, then does the chores the hub handed
// out; false ends the stream.
//
// Not inlined, and neither is lastWord: an Update in pump's own frame
// would keep that frame large while the stream waits, and a waiting
// stream's goroutine stack is shrunk (halved, at a collection) only
// while it uses under a quarter of it. Measured at 18,000 streams: with
// them inlined the stacks stayed at 8 KiB each.
//
//go:noinline
func deliver(sub *stream.Sub, w writer) bool {
	if u, ok := sub.Take(); ok && !w.send(u) {
		return false
	}
	c := sub.Chores()
	switch {
	case c&stream.Expire != 0:
		w.send(stream.Update{Gone: true}) // the queue token expired
		return false
	case c&stream.Check != 0 && w.closed():
		return false
	case c&stream.Beat != 0:
		return w.keepAlive()
	}
	return true
}
