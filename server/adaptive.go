package server

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"waitingroom/queue"
	"waitingroom/queue/adaptive"
)

// Adaptive admission, the server's side (package queue/adaptive owns the
// rest): the order use case (package checkout) records each order's
// latency and outcome in the Recorder, whose loop flushes them with the
// pool's acquire wait; the Controller steps every room once a window and
// reports back through observeStep, which sets the metrics; the admin API
// shows a room's state (adaptiveDoc) and validates bounds with limitRule.

// limitRule is the controller's rule from the configuration
// (WR_ADAPTIVE_MIN, WR_ADAPTIVE_MAX, WR_ADAPTIVE_MIN_SAMPLES,
// WR_ADAPTIVE_P90_CEILING).
func (s *Server) limitRule() adaptive.Rule {
	return adaptive.Rule{Min: s.cfg.AdaptiveMin, Max: s.cfg.AdaptiveMax,
		MinSamples: s.cfg.AdaptiveMinSamples, Ceiling: s.cfg.AdaptiveCeiling}
}

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

// signalsDoc is a room's last window of signals in the admin API.
type signalsDoc struct {
	WindowSeconds float64 `json:"windowSeconds"`
	Orders        int64   `json:"orders"`
	Errors        int64   `json:"errors"`
	ErrorRate     float64 `json:"errorRate"`
	P90Ms         float64 `json:"p90Ms"`
	BaselineP90Ms float64 `json:"baselineP90Ms"`
	PoolWaitMs    float64 `json:"poolWaitMs"`
	// Stale: no window has been evaluated lately, or nobody reported the
	// last one.
	Stale bool `json:"stale"`
}

// limitChangeDoc is the last change of an adaptive room's limit.
type limitChangeDoc struct {
	At     time.Time `json:"at"`
	From   int64     `json:"from"`
	To     int64     `json:"to"`
	Reason string    `json:"reason"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// adaptiveDoc fills the adaptive part of a room document.
func (s *Server) adaptiveDoc(d *roomDoc, r queue.RoomInfo, st adaptive.State) {
	d.Mode = string(r.Mode)
	b := s.limitRule().WithBounds(r.MinActive, r.MaxActive)
	d.MinActive, d.MaxActive = b.Min, b.Max
	sig := st.Signals
	win := sig.Window
	if win <= 0 {
		win = s.cfg.AdaptiveWindow
	}
	d.Signals = signalsDoc{
		WindowSeconds: win.Seconds(), Orders: sig.Orders, Errors: sig.Errors, ErrorRate: sig.ErrorRate(),
		P90Ms: ms(sig.P90), BaselineP90Ms: ms(sig.Baseline), PoolWaitMs: ms(sig.PoolWait),
		Stale: !st.Fresh(time.Now()),
	}
	if lc := st.LastChange; lc != nil {
		d.LastChange = &limitChangeDoc{At: lc.At, From: lc.From, To: lc.To, Reason: lc.Reason}
	}
}

// roomDoc reads a room's adaptive state and builds its document.
func (s *Server) roomDoc(c *fiber.Ctx, r queue.RoomInfo) (roomDoc, error) {
	st, err := s.ctl.State(c.UserContext(), r.Name)
	if err != nil {
		return roomDoc{}, err
	}
	d := toRoomDoc(r)
	s.adaptiveDoc(&d, r, st)
	return d, nil
}
