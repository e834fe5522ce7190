package server

import (
	"waitingroom/queue/adaptive"
)

// Adaptive admission, the server's side (package queue/adaptive owns the
// rest): the order use case (package checkout) records each order's
// latency and outcome in the Recorder, whose loop flushes them with the
// pool's acquire wait; the Controller steps every room once a window and
// reports back through observeStep, which sets the metrics; the admin API
// (package admin) shows a room's state and validates bounds with the rule
// of Config.Adaptive.

// poolStats is the Store's pool figures for the signals, nil when the
// Store has none (pgstore.Store has them; test fakes need not).
func (s *Server) poolStats() adaptive.PoolStats {
	ps, _ := s.store.(adaptive.PoolStats)
	return ps
}

// observeStep sets the adaptive metrics of room after a controller step.
func (s *Server) observeStep(room string, st adaptive.State, limit int64) {
	s.m.limit.WithLabelValues(room).Set(float64(limit))
	sig := st.Signals
	s.m.sigOrders.WithLabelValues(room).Set(float64(sig.Orders))
	s.m.sigErrorRate.WithLabelValues(room).Set(sig.ErrorRate())
	s.m.sigP90.WithLabelValues(room).Set(sig.P90.Seconds())
	s.m.sigBaseline.WithLabelValues(room).Set(sig.Baseline.Seconds())
	s.m.sigPoolWait.WithLabelValues(room).Set(sig.PoolWait.Seconds())
}
