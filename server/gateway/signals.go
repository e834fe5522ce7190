package gateway

import (
	"sync"
	"time"
)

// Adaptive signals in gateway mode. Every protected request tells how the
// origin did, but one admitted visitor makes as many requests as it likes,
// and may make them fail or slow (a query the origin refuses): counted
// request by request, one visitor could drive an adaptive room's limit
// down for everyone. So the gateway counts visitors, not requests:
//
//   - a visitor (the pass's subject) gives at most one sample a window
//     (its first request's latency and outcome), so with the default
//     adaptive.Rule.MinSamples (20) one visitor is at most a twentieth of
//     a window's samples, below what moves the p90;
//   - a failure counts only once confirmFailing distinct visitors failed
//     in the window, on this instance: the first failures wait, and are
//     dropped if no others come, since failures seen by one visitor alone
//     say more about its requests than about the origin.
//
// A window has the adaptive controller's length and numbering.

// confirmFailing is how many distinct visitors must fail in one window for
// their failures to count.
const confirmFailing = 3

// maxSampled bounds the visitors remembered per room and window; beyond
// it, samples are dropped (there are plenty by then).
const maxSampled = 1 << 16

// sampler gathers the gateway's samples for the Recorder. It is safe for
// concurrent use.
type sampler struct {
	rec    Recorder
	mu     sync.Mutex
	window int64
	rooms  map[string]*roomSamples
}

// roomSamples is one room's window so far.
type roomSamples struct {
	seen    map[string]struct{} // visitors sampled
	failing int                 // of which failed
	held    []time.Duration     // failures waiting for confirmation
}

// add samples visitor's request to room, or drops it.
func (s *sampler) add(room, visitor string, latency time.Duration, failed bool, now time.Time) {
	if s.rec == nil {
		return
	}
	w := now.UnixMilli() / max(s.rec.Window().Milliseconds(), 1)
	s.mu.Lock()
	if w != s.window || s.rooms == nil {
		s.window, s.rooms = w, map[string]*roomSamples{}
	}
	r := s.rooms[room]
	if r == nil {
		r = &roomSamples{seen: map[string]struct{}{}}
		s.rooms[room] = r
	}
	if _, dup := r.seen[visitor]; dup || len(r.seen) >= maxSampled {
		s.mu.Unlock()
		return
	}
	r.seen[visitor] = struct{}{}
	var failures []time.Duration
	if failed {
		r.failing++
		r.held = append(r.held, latency)
		if r.failing >= confirmFailing {
			failures, r.held = r.held, nil
		}
	}
	s.mu.Unlock()
	if !failed {
		s.rec.Order(room, latency, false, now)
	}
	for _, l := range failures {
		s.rec.Order(room, l, true, now)
	}
}
