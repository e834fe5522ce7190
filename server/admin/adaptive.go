package admin

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"

	"waitingroom/queue"
	"waitingroom/queue/adaptive"
)

// A room's adaptive admission (package queue/adaptive) in the admin API:
// its mode and bounds, the last window of signals and the last change of
// its limit.

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
func (a *app) adaptiveDoc(d *roomDoc, r queue.RoomInfo, st adaptive.State) {
	d.Mode = string(r.Mode)
	b := a.Rule.WithBounds(r.MinActive, r.MaxActive)
	d.MinActive, d.MaxActive = b.Min, b.Max
	sig := st.Signals
	win := sig.Window
	if win <= 0 {
		win = a.Window
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
func (a *app) roomDoc(c *fiber.Ctx, r queue.RoomInfo) (roomDoc, error) {
	return a.roomDocOf(c.UserContext(), r)
}

// roomDocOf is roomDoc outside a request's handler.
func (a *app) roomDocOf(ctx context.Context, r queue.RoomInfo) (roomDoc, error) {
	st, err := a.Controller.State(ctx, r.Name)
	if err != nil {
		return roomDoc{}, err
	}
	d := toRoomDoc(r)
	a.adaptiveDoc(&d, r, st)
	d.Gateway = a.gatewayDocOf(r.Name)
	return d, nil
}
