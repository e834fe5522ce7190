package admin

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"

	"waitingroom/server/api"
	"waitingroom/server/faults"
)

// Fault injection (package faults: an order delay shared through Redis) in
// the admin API, which shows and sets it. Setting it on an instance whose
// fault injection is off (Faults.Enabled) is refused with 403
// faults_disabled, naming the switch (Names.FaultInjection).

// faultsDoc is the faults as the admin API shows them.
type faultsDoc struct {
	Enabled      bool   `json:"enabled"`
	OrderDelay   string `json:"orderDelay"`
	OrderDelayMs int64  `json:"orderDelayMs"`
	RowDelay     string `json:"rowDelay"`
	RowDelayMs   int64  `json:"rowDelayMs"`
}

// getFaults shows the faults in force cluster-wide (read from Redis) and
// whether this instance may apply them.
func (a *app) getFaults(c *fiber.Ctx) error {
	d, err := a.Faults.Read(c.UserContext())
	if err != nil {
		return errors.Join(api.ErrUnavailable, err)
	}
	r, err := a.Faults.ReadRow(c.UserContext())
	if err != nil {
		return errors.Join(api.ErrUnavailable, err)
	}
	return c.JSON(newFaultsDoc(a.Faults.Enabled(), d, r))
}

// faultsDisabled refuses to set the faults on an instance whose fault
// injection is off (api's faults.ErrDisabled), naming the switch that
// turns it on.
func (a *app) faultsDisabled() error {
	return &api.Error{Status: fiber.StatusForbidden, Code: "faults_disabled",
		Message: "fault injection is off: start the server with " + a.Names.FaultInjection + "=on"}
}

func newFaultsDoc(enabled bool, order, row time.Duration) faultsDoc {
	return faultsDoc{Enabled: enabled, OrderDelay: order.String(), OrderDelayMs: order.Milliseconds(),
		RowDelay: row.String(), RowDelayMs: row.Milliseconds()}
}

// faultsPut is the body of PUT /admin/faults: {"orderDelay":"300ms"}, or
// {"rowDelay":"10ms"} (slept inside the order's row lock), or both; "0s"
// (or 0) removes a delay, an absent one stays.
type faultsPut struct {
	OrderDelay json.RawMessage `json:"orderDelay"`
	RowDelay   json.RawMessage `json:"rowDelay"`
}

func (a *app) putFaults(c *fiber.Ctx) error {
	if !a.Faults.Enabled() {
		return a.faultsDisabled() // before reading the body, whatever it holds
	}
	var req faultsPut
	if err := api.DecodeStrict(c, &req); err != nil {
		return err
	}
	if len(req.OrderDelay) == 0 && len(req.RowDelay) == 0 {
		return api.BadRequest("orderDelay or rowDelay is required, e.g. \"300ms\" (\"0s\" removes it)")
	}
	ctx := c.UserContext()
	var d, r time.Duration
	var err error
	if len(req.OrderDelay) > 0 {
		if d, err = parseDelay(req.OrderDelay, "orderDelay"); err != nil {
			return api.BadRequest(err.Error())
		}
	}
	if len(req.RowDelay) > 0 {
		if r, err = parseDelay(req.RowDelay, "rowDelay"); err != nil {
			return api.BadRequest(err.Error())
		}
	}
	if len(req.OrderDelay) > 0 {
		if err := a.Faults.SetOrderDelay(ctx, d); err != nil {
			return errors.Join(api.ErrUnavailable, err)
		}
	} else if d, err = a.Faults.Read(ctx); err != nil {
		return errors.Join(api.ErrUnavailable, err)
	}
	if len(req.RowDelay) > 0 {
		if err := a.Faults.SetRowDelay(ctx, r); err != nil {
			return errors.Join(api.ErrUnavailable, err)
		}
	} else if r, err = a.Faults.ReadRow(ctx); err != nil {
		return errors.Join(api.ErrUnavailable, err)
	}
	a.Logger.Warn("fault injection changed by admin", "orderDelay", d, "rowDelay", r)
	return c.JSON(newFaultsDoc(true, d, r))
}

// parseDelay reads a duration string ("300ms") or a number of
// milliseconds, from 0 to faults.MaxOrderDelay.
func parseDelay(raw json.RawMessage, field string) (time.Duration, error) {
	return parseDurationField(raw, field, "300ms", time.Millisecond, 0, faults.MaxOrderDelay)
}
