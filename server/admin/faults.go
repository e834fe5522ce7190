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
// the admin API, which shows and sets it. Refusing to set it on an
// instance without WR_FAULT_INJECTION=on is api's mapping of
// faults.ErrDisabled.

// faultsDoc is the faults as the admin API shows them.
type faultsDoc struct {
	Enabled      bool   `json:"enabled"`
	OrderDelay   string `json:"orderDelay"`
	OrderDelayMs int64  `json:"orderDelayMs"`
}

// getFaults shows the faults in force cluster-wide (read from Redis) and
// whether this instance may apply them.
func (a *app) getFaults(c *fiber.Ctx) error {
	d, err := a.Faults.Read(c.UserContext())
	if err != nil {
		return errors.Join(api.ErrUnavailable, err)
	}
	return c.JSON(faultsDoc{Enabled: a.Faults.Enabled(), OrderDelay: d.String(), OrderDelayMs: d.Milliseconds()})
}

// faultsPut is the body of PUT /admin/faults: {"orderDelay":"300ms"}; "0s"
// (or 0) removes the delay.
type faultsPut struct {
	OrderDelay json.RawMessage `json:"orderDelay"`
}

func (a *app) putFaults(c *fiber.Ctx) error {
	if !a.Faults.Enabled() {
		return faults.ErrDisabled // before reading the body, whatever it holds
	}
	var req faultsPut
	if err := api.DecodeStrict(c, &req); err != nil {
		return err
	}
	if len(req.OrderDelay) == 0 {
		return api.BadRequest("orderDelay is required, e.g. \"300ms\" (\"0s\" removes it)")
	}
	d, err := parseDelay(req.OrderDelay)
	if err != nil {
		return api.BadRequest(err.Error())
	}
	if err := a.Faults.SetOrderDelay(c.UserContext(), d); err != nil {
		return errors.Join(api.ErrUnavailable, err)
	}
	a.Logger.Warn("fault injection changed by admin", "orderDelay", d)
	return c.JSON(faultsDoc{Enabled: true, OrderDelay: d.String(), OrderDelayMs: d.Milliseconds()})
}

// parseDelay reads a duration string ("300ms") or a number of
// milliseconds, from 0 to faults.MaxOrderDelay.
func parseDelay(raw json.RawMessage) (time.Duration, error) {
	return parseDurationField(raw, "orderDelay", "300ms", time.Millisecond, 0, faults.MaxOrderDelay)
}
