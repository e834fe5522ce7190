package metrics

import (
	"waitingroom/queue"
	"waitingroom/queue/adaptive"
	"waitingroom/queue/history"
)

// The observers of the rooms: each takes rooms.mu, so a room's series
// change only with its record (rooms.go).

// ObserveAdmission sets the room's gauges and counts after one admission
// run (admission.Options.OnAdmit). A run that found work (someone
// waiting or active, someone admitted, pruned or removed, an opening due)
// is activity of the room here; one that found none (a room's last run
// reports its zeros) updates the room's series if it has them and keeps
// it no longer.
func (m *Metrics) ObserveAdmission(a queue.AdmitResult) {
	n := len(a.Admitted)
	work := a.Waiting > 0 || a.Active > 0 || n > 0 || a.Pruned > 0 || a.Abandoned > 0 || a.Due || a.PreQueue > 0
	r := m.rooms
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.roomLocked(a.Room, work)
	if s == nil {
		return // idle, and not seen here lately: nothing to count
	}
	r.sumW += a.Waiting - s.waiting
	r.sumA += a.Active - s.active
	s.waiting, s.active = a.Waiting, a.Active
	r.totWaiting.Set(float64(r.sumW))
	r.totActive.Set(float64(r.sumA))
	r.totAdmitted.Add(float64(n))
	r.totExpired.Add(float64(a.Pruned))
	r.totAbandoned.Add(float64(a.Abandoned))
	r.totPassedOver.Add(float64(a.PassedFirst))
	if !s.series {
		return
	}
	r.waiting.WithLabelValues(a.Room).Set(float64(a.Waiting))
	r.active.WithLabelValues(a.Room).Set(float64(a.Active))
	r.target.WithLabelValues(a.Room).Set(float64(a.Target))
	r.limit.WithLabelValues(a.Room).Set(float64(a.Target))
	r.paused.WithLabelValues(a.Room).Set(map[bool]float64{true: 1}[a.Paused])
	if n > 0 {
		r.admitted.WithLabelValues(a.Room).Add(float64(n))
	}
	if a.Pruned > 0 {
		r.expired.WithLabelValues(a.Room).Add(float64(a.Pruned))
	}
	if a.Abandoned > 0 {
		r.abandoned.WithLabelValues(a.Room).Add(float64(a.Abandoned))
	}
	if a.PassedFirst > 0 {
		r.passedOver.WithLabelValues(a.Room).Add(float64(a.PassedFirst))
	}
}

// ObserveEnter counts a new ticket issued through this instance, and an
// admission when the room let the user straight in (passthrough):
// activity of the room here.
func (m *Metrics) ObserveEnter(room string, passthrough bool) {
	r := m.rooms
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.roomLocked(room, true)
	r.totEntered.Inc()
	if passthrough {
		r.totAdmitted.Inc()
	}
	if !s.series {
		return
	}
	r.entered.WithLabelValues(room).Inc()
	if passthrough {
		r.admitted.WithLabelValues(room).Inc()
	}
}

// JudgedETA records a room's judged estimates (history.WithJudge), for a
// room with series only: the judge visits rooms on a schedule, busy or
// not, so a judgement is no activity.
func (m *Metrics) JudgedETA(room string, e history.ETAError) {
	r := m.rooms
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.labelledLocked(room) {
		return
	}
	r.etaError.WithLabelValues(room).Set(e.MedianPct / 100)
	r.etaJudged.WithLabelValues(room).Set(float64(e.Count))
}

// ShownETA records the ETA room's last in line is shown, in seconds (-1:
// withheld, or nobody waits: the series is removed), from the room's
// history point (history.WithShown), for a room with series only: the
// history records the rooms on a schedule, so a point is no activity.
func (m *Metrics) ShownETA(room string, seconds int64) {
	r := m.rooms
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.labelledLocked(room) {
		return
	}
	if seconds < 0 {
		r.etaLast.DeleteLabelValues(room)
		return
	}
	r.etaLast.WithLabelValues(room).Set(float64(seconds))
}

// ObserveStep sets the adaptive metrics of room after a controller step
// (adaptive.Options.OnStep), for a room with series only: the
// controller steps rooms on a schedule, so a step is no activity.
func (m *Metrics) ObserveStep(room string, st adaptive.State, limit int64) {
	r := m.rooms
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.labelledLocked(room) {
		return
	}
	r.limit.WithLabelValues(room).Set(float64(limit))
	sig := st.Signals
	r.sigOrders.WithLabelValues(room).Set(float64(sig.Orders))
	r.sigErrorRate.WithLabelValues(room).Set(sig.ErrorRate())
	r.sigP90.WithLabelValues(room).Set(sig.P90.Seconds())
	r.sigBaseline.WithLabelValues(room).Set(sig.Baseline.Seconds())
	r.sigPoolWait.WithLabelValues(room).Set(sig.PoolWait.Seconds())
}

// ObserveLimitChange counts a change of room's adaptive limit
// (adaptive.Options.OnChange), for a room with series only (as
// ObserveStep).
func (m *Metrics) ObserveLimitChange(room string, st adaptive.Step) {
	r := m.rooms
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.labelledLocked(room) {
		return
	}
	r.limitChanges.WithLabelValues(room, st.Reason).Inc()
}

// ForgetRoom removes every series of room here and takes its last
// admission run out of the totals: the admission loop calls it when
// this instance no longer runs the room. An enter through this instance
// or an admission run with work afterwards starts the room's series
// again, its counters from 0 (a counter reset, which rate() and
// increase() take as one).
func (m *Metrics) ForgetRoom(room string) { m.rooms.forget(room) }
