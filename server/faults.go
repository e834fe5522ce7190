package server

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"

	"waitingroom/queue/loop"
)

// Fault injection, for tests and demos of adaptive admission: an order-path
// delay slept inside the order transaction (pg_sleep), so it really holds a
// pool connection, as a slow database would. It is set through the admin
// API, stored in Redis (one hash, "<prefix>faults") and read by every
// instance twice a second. An instance started without
// WR_FAULT_INJECTION=on refuses to set it and never applies it, whatever
// Redis holds.

// maxOrderDelay bounds the injected delay.
const maxOrderDelay = 30 * time.Second

var errFaultsDisabled = &apiError{status: fiber.StatusForbidden, code: "faults_disabled",
	message: "fault injection is off: start the server with WR_FAULT_INJECTION=on"}

func (s *Server) faultsKey() string { return s.keyPrefix + "faults" }

// orderDelay is the delay this instance applies to orders now.
func (s *Server) orderDelay() time.Duration {
	if !s.cfg.FaultInjection {
		return 0
	}
	return time.Duration(s.delay.Load())
}

// readDelay reads the order delay in force cluster-wide from Redis.
func (s *Server) readDelay(ctx context.Context) (time.Duration, error) {
	ms, err := s.rdb.HGet(ctx, s.faultsKey(), "order_delay_ms").Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return time.Duration(ms) * time.Millisecond, err
}

// loadFaults reads the faults from Redis into memory.
func (s *Server) loadFaults(ctx context.Context) error {
	d, err := s.readDelay(ctx)
	if err != nil {
		return err
	}
	s.delay.Store(int64(d))
	return nil
}

// runFaultsRefresh keeps the faults fresh until ctx is done (only when
// fault injection is on).
func (s *Server) runFaultsRefresh(ctx context.Context) {
	if !s.cfg.FaultInjection {
		return
	}
	loop.NowAndEvery(ctx, 500*time.Millisecond, func(ctx context.Context) { _ = s.loadFaults(ctx) })
}

// faultsDoc is the faults as the admin API shows them.
type faultsDoc struct {
	Enabled      bool   `json:"enabled"`
	OrderDelay   string `json:"orderDelay"`
	OrderDelayMs int64  `json:"orderDelayMs"`
}

// adminGetFaults shows the faults in force cluster-wide (read from Redis)
// and whether this instance may apply them.
func (s *Server) adminGetFaults(c *fiber.Ctx) error {
	d, err := s.readDelay(c.UserContext())
	if err != nil {
		return errors.Join(errDBUnavailable, err)
	}
	return c.JSON(faultsDoc{Enabled: s.cfg.FaultInjection, OrderDelay: d.String(), OrderDelayMs: d.Milliseconds()})
}

// faultsPut is the body of PUT /admin/faults: {"orderDelay":"300ms"}; "0s"
// (or 0) removes the delay.
type faultsPut struct {
	OrderDelay json.RawMessage `json:"orderDelay"`
}

func (s *Server) adminPutFaults(c *fiber.Ctx) error {
	if !s.cfg.FaultInjection {
		return errFaultsDisabled
	}
	var req faultsPut
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if len(req.OrderDelay) == 0 {
		return errBadRequest("orderDelay is required, e.g. \"300ms\" (\"0s\" removes it)")
	}
	d, err := parseDelay(req.OrderDelay)
	if err != nil {
		return errBadRequest(err.Error())
	}
	ctx := c.UserContext()
	if err := s.rdb.HSet(ctx, s.faultsKey(), "order_delay_ms", d.Milliseconds()).Err(); err != nil {
		return errors.Join(errDBUnavailable, err)
	}
	s.delay.Store(int64(d))
	s.log.Warn("fault injection changed by admin", "orderDelay", d)
	return c.JSON(faultsDoc{Enabled: true, OrderDelay: d.String(), OrderDelayMs: d.Milliseconds()})
}

// parseDelay reads a duration string ("300ms") or a number of
// milliseconds, from 0 to maxOrderDelay.
func parseDelay(raw json.RawMessage) (time.Duration, error) {
	return parseDurationField(raw, "orderDelay", "300ms", time.Millisecond, 0, maxOrderDelay)
}
