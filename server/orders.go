package server

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"waitingroom/queue"
	"waitingroom/server/pgstore"
)

// restoreGrace is the least time a restored entry token stays valid, so a
// failure near the window's end still leaves time to retry.
const restoreGrace = 30 * time.Second

type orderRequest struct {
	ProductID *int64 `json:"productId"`
	Quantity  *int64 `json:"quantity"`
}

// order places an order with a one-time entry token. The token is consumed
// atomically before the transaction; the active slot is released when the
// transaction ends with a business outcome (placed, out of stock, unknown
// product) and the token is restored when it fails for an infrastructure
// reason (database unreachable, timeout), so the user can retry.
func (s *Server) order(c *fiber.Ctx) error {
	claims, err := s.queueClaims(c)
	if err != nil {
		return err
	}
	var req orderRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.ProductID == nil || *req.ProductID <= 0 {
		return errBadRequest("productId must be a positive integer")
	}
	if req.Quantity == nil || *req.Quantity < 1 || *req.Quantity > int64(s.cfg.MaxQuantity) {
		return errBadRequest("quantity must be an integer from 1 to " + strconv.Itoa(s.cfg.MaxQuantity))
	}
	entry := c.Get("X-Entry-Token")
	if entry == "" {
		s.m.orders.WithLabelValues("token_invalid").Inc()
		return errEntryTokenNeeded
	}
	ctx := c.UserContext()
	// The last line: a room-wide ceiling that holds even if the queue is
	// bypassed by a bug, then a per-user one; both before the token is spent.
	if err := s.limit(c, "order_room", claims.Room, claims.Subject, s.cfg.Limits.OrderRoom, false); err != nil {
		return err
	}
	if err := s.limit(c, "order_user", claims.Subject, claims.Subject, s.cfg.Limits.OrderUser, false); err != nil {
		return err
	}
	// An unknown product is refused while the token is still unspent: a
	// typo must not cost the wait. (A product deleted after this check is
	// still refused by the transaction, with the token spent.)
	if err := s.knownProduct(ctx, *req.ProductID); err != nil {
		if errors.Is(err, pgstore.ErrProductNotFound) {
			s.m.orders.WithLabelValues("product_not_found").Inc()
		}
		return err
	}
	// In flight for at most twice the transaction's deadline: the slot is
	// released or the token restored long before admission prunes it.
	claim, err := s.q.Consume(ctx, claims.Room, claims.Subject, entry, 2*s.cfg.OrderTimeout)
	if err != nil {
		if errors.Is(err, queue.ErrEntryTokenInvalid) {
			s.m.orders.WithLabelValues("token_invalid").Inc()
		}
		return err
	}
	uid, _ := strconv.ParseInt(claims.Subject, 10, 64)
	octx, cancel := context.WithTimeout(ctx, s.cfg.OrderTimeout)
	began := time.Now()
	o, err := s.store.PlaceOrder(octx, pgstore.OrderRequest{
		UserID: uid, ProductID: *req.ProductID, Quantity: int(*req.Quantity), Room: claims.Room,
		Delay: s.faults.OrderDelay(),
	})
	cancel()
	s.recordOrder(claims.Room, began, err)
	// Finish the slot's bookkeeping even if the client has gone away.
	bctx, bcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer bcancel()
	switch {
	case errors.Is(err, pgstore.ErrInvalidInput):
		// The database refused a value of the request (validated above, so
		// this is a gap in validation): the client's fault, not the shop's,
		// and not a reason to lose the turn. The token is given back.
		s.m.orders.WithLabelValues("invalid").Inc()
		if _, rerr := s.restore(bctx, claim); rerr != nil {
			s.log.LogAttrs(ctx, slog.LevelWarn, "restoring the entry token after a refused value failed",
				slog.String("room", claim.Room), slog.String("error", rerr.Error()))
		}
		return dbError(err)
	case err == nil, pgstore.IsOutcome(err):
		if _, rerr := s.q.Release(bctx, claim); rerr != nil {
			s.log.LogAttrs(ctx, slog.LevelWarn, "release failed; the slot frees when its in-flight deadline passes",
				slog.String("room", claim.Room), slog.String("error", rerr.Error()))
		}
	default:
		restored, rerr := s.restore(bctx, claim)
		s.m.orders.WithLabelValues("unavailable").Inc()
		s.log.LogAttrs(ctx, slog.LevelWarn, "order failed for an infrastructure reason",
			slog.String("room", claim.Room), slog.Bool("token_restored", restored), slog.String("error", err.Error()))
		if rerr != nil || !restored {
			return &apiError{status: 503, code: "unavailable", retryAfter: 1,
				message: "the shop is briefly unavailable and your entry window could not be kept: enter again"}
		}
		return &apiError{status: 503, code: "unavailable", retryAfter: 1,
			message: "the shop is briefly unavailable; your entry token is kept, retry the same order"}
	}
	switch {
	case err == nil:
		s.m.orders.WithLabelValues("placed").Inc()
	case errors.Is(err, pgstore.ErrOutOfStock):
		s.m.orders.WithLabelValues("out_of_stock").Inc()
		return err
	case errors.Is(err, pgstore.ErrProductNotFound):
		s.m.orders.WithLabelValues("product_not_found").Inc()
		return err
	case errors.Is(err, pgstore.ErrUserNotFound):
		// A valid token for a user the database no longer has.
		s.m.orders.WithLabelValues("unknown_user").Inc()
		return &apiError{status: fiber.StatusUnauthorized, code: "unauthorized", message: "this account no longer exists"}
	default:
		s.m.orders.WithLabelValues("refused").Inc()
		return errBadRequest("the order was refused: " + err.Error())
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{
		"orderId": o.ID, "productId": o.ProductID, "quantity": o.Quantity, "status": "PLACED",
	})
}

// restore gives the token back, retrying while Redis is briefly
// unreachable (an overloaded moment must not cost the user their turn).
func (s *Server) restore(ctx context.Context, c queue.Claim) (bool, error) {
	var err error
	for wait := 50 * time.Millisecond; ; wait *= 2 {
		var ok bool
		if ok, err = s.q.Restore(ctx, c, restoreGrace); !errors.Is(err, queue.ErrUnavailable) {
			return ok, err
		}
		select {
		case <-ctx.Done():
			return false, err
		case <-time.After(wait):
		}
	}
}

// product returns one product.
func (s *Server) product(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id <= 0 {
		return errBadRequest("the product id must be a positive integer")
	}
	p, err := s.store.Product(c.UserContext(), id)
	if err != nil {
		return dbError(err)
	}
	s.products.put(id, true, time.Now())
	return c.JSON(p)
}

// dbError is the answer to a store error: its business outcome (errors.go's
// table), 400 with the reason for a value the database refused
// (pgstore.InputError: the request's fault, never an outage), else 503.
func dbError(err error) error {
	var ie *pgstore.InputError
	switch {
	case errors.As(err, &ie):
		return errBadRequest("a value of the request was refused: " + ie.Reason)
	case pgstore.IsOutcome(err):
		return err
	}
	return errors.Join(errDBUnavailable, err)
}

// Product ids an order may name are checked against a per-instance cache
// before the entry token is spent. A known id is trusted for
// productKnownTTL, an unknown one for productUnknownTTL (short: a product
// created a moment ago must not be refused for long, and an id guessed by
// a scanner costs at most one query per this period per id). The cache
// holds at most productCacheMax ids; when full it is emptied.
const (
	productKnownTTL   = time.Minute
	productUnknownTTL = 5 * time.Second
	productCacheMax   = 10_000
)

type productCache struct {
	mu sync.Mutex
	m  map[int64]productEntry
}

type productEntry struct {
	known bool
	until time.Time
}

func (p *productCache) get(id int64, now time.Time) (known, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.m[id]
	if !ok || now.After(e.until) {
		return false, false
	}
	return e.known, true
}

func (p *productCache) put(id int64, known bool, now time.Time) {
	ttl := productKnownTTL
	if !known {
		ttl = productUnknownTTL
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil || len(p.m) >= productCacheMax {
		p.m = make(map[int64]productEntry)
	}
	p.m[id] = productEntry{known: known, until: now.Add(ttl)}
}

// knownProduct returns pgstore.ErrProductNotFound for a product id that does
// not exist, from the cache or one query.
func (s *Server) knownProduct(ctx context.Context, id int64) error {
	now := time.Now()
	known, ok := s.products.get(id, now)
	if !ok {
		_, err := s.store.Product(ctx, id)
		switch {
		case err == nil:
			known = true
		case errors.Is(err, pgstore.ErrProductNotFound):
		default:
			return dbError(err)
		}
		s.products.put(id, known, now)
	}
	if !known {
		return pgstore.ErrProductNotFound
	}
	return nil
}

// recordOrder feeds one order into the adaptive signals: its latency, and
// whether it failed for an infrastructure reason (a business refusal is a
// healthy answer of the downstream).
func (s *Server) recordOrder(room string, began time.Time, err error) {
	now := time.Now()
	s.rec.Order(room, now.Sub(began), err != nil && !pgstore.IsOutcome(err), now)
}
