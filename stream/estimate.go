package stream

import (
	"sync"
	"time"

	"waitingroom/queue"
	"waitingroom/queue/estimate"
)

// The hub makes each room's wait estimate: every resync's snapshot (about
// one a second) is a sample for the room's estimator (package
// queue/estimate), and the forecast it returns travels with the room's
// state, so every poll and push answered here reads it without a lock.

// estimators holds the rooms' estimators. Resync is their one feeder, but
// it may be called from more than one goroutine (the loop, tests), hence
// the lock.
type estimators struct {
	mu sync.Mutex
	m  map[string]*estimate.Estimator
}

// observe feeds sn, read at now, to its room's estimator.
func (e *estimators) observe(sn queue.RoomSnapshot, now time.Time) estimate.Forecast {
	e.mu.Lock()
	defer e.mu.Unlock()
	est := e.m[sn.Room]
	if est == nil {
		est = &estimate.Estimator{}
		e.m[sn.Room] = est
	}
	return est.Observe(sampleOf(sn, now))
}

// forget drops room's estimator (the room is no longer tracked).
func (e *estimators) forget(room string) {
	e.mu.Lock()
	delete(e.m, room)
	e.mu.Unlock()
}

// sampleOf is the estimator's sample of a snapshot.
func sampleOf(sn queue.RoomSnapshot, now time.Time) estimate.Sample {
	f := sn.Flow
	return estimate.Sample{At: now, Target: sn.Target, Active: f.Active, Waiting: sn.Waiting, EntryTTL: f.EntryTTL,
		Halted: sn.Paused || sn.Closed, Admitted: f.Admitted, Expired: f.Expired, Departed: f.Departed,
		Passed: f.Passed, PassedWaiting: f.PassedWaiting,
		Holds: f.Holds, HoldTime: f.HoldTime, Remaining: f.Remaining, Bin: f.Bin, Prior: priorOf(sn.Expected)}
}

// priorOf is what the estimator stands on before the room has measured:
// the operator's expected order time before the last sale's hold (the
// operator sets it for this sale, and clears it to fall back on the last
// one), the last sale's no-show share when there was one.
func priorOf(e queue.Expectation) estimate.Prior {
	var p estimate.Prior
	if e.LastKnown {
		p = estimate.Prior{Hold: e.LastHold, NoShow: e.LastNoShow, NoShowKnown: true,
			Absent: e.LastAbsent, AbsentKnown: e.LastAbsentKnown}
	}
	if e.Order > 0 {
		p.Hold = e.Order
	}
	return p
}

// Forecast returns room's wait forecast as of the last resync: unknown
// (the zero Forecast) until the room has been read here. A room asked for
// here the first time is tracked from now on.
func (h *Hub) Forecast(room string) estimate.Forecast {
	st := h.use(room).Load()
	if st == nil {
		h.requestResync()
		return estimate.Forecast{}
	}
	return st.fc
}
