package checkout

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"waitingroom/queue"
	"waitingroom/server/pgstore"
)

// restoreGrace is the least time a restored entry token stays valid, so a
// failure near the window's end still leaves time to retry.
const restoreGrace = 30 * time.Second

// settleTimeout bounds the slot's bookkeeping after the transaction, which
// runs even if the client has gone away.
const settleTimeout = 5 * time.Second

// Store is what an order needs from Postgres (pgstore.Store).
type Store interface {
	Product(ctx context.Context, id int64) (pgstore.Product, error)
	PlaceOrder(ctx context.Context, r pgstore.OrderRequest) (pgstore.Order, error)
}

// Slots is what an order needs from the queue (queue.Queue): spending the
// entry token, and releasing the slot or giving the token back.
type Slots interface {
	Consume(ctx context.Context, room, user, token string, inFlight time.Duration) (queue.Claim, error)
	Release(ctx context.Context, c queue.Claim) (bool, error)
	Restore(ctx context.Context, c queue.Claim, grace time.Duration) (bool, error)
}

// Recorder takes each order's latency and whether it failed for an
// infrastructure reason (adaptive.Recorder: the adaptive signals).
type Recorder interface {
	Order(room string, latency time.Duration, failed bool, now time.Time)
}

// Options are the dependencies of a Checkout.
type Options struct {
	Store Store
	Slots Slots
	// Orders reads a user's own orders; nil: the Store, when it can
	// (pgstore.Store does).
	Orders   OrderReader
	Recorder Recorder
	// Timeout is the order transaction's deadline; a consumed token is in
	// flight for at most twice as long.
	Timeout time.Duration
	// Delay, when set, is the injected order delay now (faults.OrderDelay).
	Delay func() time.Duration
	// RowDelay, when set, is the injected delay inside the order's row
	// lock now (faults.RowDelay).
	RowDelay func() time.Duration
	Logger   *slog.Logger
}

// Checkout places orders.
type Checkout struct {
	o        Options
	products productCache
}

// New returns a Checkout.
func New(o Options) *Checkout {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.RowDelay == nil {
		o.RowDelay = func() time.Duration { return 0 }
	}
	if o.Delay == nil {
		o.Delay = func() time.Duration { return 0 }
	}
	if r, ok := o.Store.(OrderReader); ok && o.Orders == nil {
		o.Orders = r
	}
	return &Checkout{o: o}
}

// Request is one order by an admitted user.
type Request struct {
	Room, User string // from the queue token; User is the numeric user id
	EntryToken string // "" when the client sent none
	ProductID  int64  // validated by the caller: > 0
	Quantity   int    // validated by the caller: 1 to its configured maximum
	// Limits, when set, is checked after the token's presence and before
	// anything else; its error is returned as is.
	Limits func(ctx context.Context) error
}

// Outcome is how an order ended: the label of waitingroom_orders_total.
type Outcome string

// The outcomes.
const (
	Placed          Outcome = "placed"
	TokenInvalid    Outcome = "token_invalid"
	ProductNotFound Outcome = "product_not_found"
	OutOfStock      Outcome = "out_of_stock"
	UnknownUser     Outcome = "unknown_user"
	Invalid         Outcome = "invalid"
	Unavailable     Outcome = "unavailable"
	Refused         Outcome = "refused"
)

// Result is what Place did. Outcome is "" when the order was stopped
// before it counted (a limit, a store failure at the product check, a
// queue error other than an invalid token).
type Result struct {
	Outcome Outcome
	Order   pgstore.Order // when Outcome is Placed
}

// Place places one order with a one-time entry token (see the package
// doc for the steps). The error is nil exactly when Outcome is Placed.
func (c *Checkout) Place(ctx context.Context, r Request) (Result, error) {
	if r.EntryToken == "" {
		return Result{Outcome: TokenInvalid}, ErrNoEntryToken
	}
	// The last line (the caller's rate limits), before the token is spent.
	if r.Limits != nil {
		if err := r.Limits(ctx); err != nil {
			return Result{}, err
		}
	}
	// An unknown product is refused while the token is still unspent. (A
	// product deleted after this check is still refused by the
	// transaction, with the token spent.)
	if err := c.knownProduct(ctx, r.ProductID); err != nil {
		if errors.Is(err, pgstore.ErrProductNotFound) {
			return Result{Outcome: ProductNotFound}, err
		}
		return Result{}, err
	}
	// In flight for at most twice the transaction's deadline: the slot is
	// released or the token restored long before admission prunes it.
	claim, err := c.o.Slots.Consume(ctx, r.Room, r.User, r.EntryToken, 2*c.o.Timeout)
	if err != nil {
		if errors.Is(err, queue.ErrEntryTokenInvalid) {
			return Result{Outcome: TokenInvalid}, err
		}
		return Result{}, err
	}
	o, err := c.placeOrder(ctx, r)
	// Finish the slot's bookkeeping even if the client has gone away.
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	if out, serr := c.settle(ctx, bctx, claim, err); serr != nil {
		return Result{Outcome: out}, serr
	}
	return outcome(o, err)
}

// placeOrder runs the order transaction within its deadline and records
// its latency and kind of failure in the adaptive signals.
func (c *Checkout) placeOrder(ctx context.Context, r Request) (pgstore.Order, error) {
	uid, _ := strconv.ParseInt(r.User, 10, 64)
	octx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	began := time.Now()
	o, err := c.o.Store.PlaceOrder(octx, pgstore.OrderRequest{
		UserID: uid, ProductID: r.ProductID, Quantity: r.Quantity, Room: r.Room,
		Delay: c.o.Delay(), RowDelay: c.o.RowDelay(),
	})
	cancel()
	if c.o.Recorder != nil {
		now := time.Now()
		c.o.Recorder.Order(r.Room, now.Sub(began), err != nil && !pgstore.IsOutcome(err), now)
	}
	return o, err
}

// settle releases the slot after a business outcome, or restores the token
// after a refused value or an infrastructure failure. It returns an error
// (and its outcome) only when the order's answer is decided here.
func (c *Checkout) settle(ctx, bctx context.Context, claim queue.Claim, err error) (Outcome, error) {
	switch {
	case errors.Is(err, pgstore.ErrInvalidInput):
		// The database refused a value of the request (validated by the
		// caller, so this is a gap in validation): the client's fault, not
		// the shop's, and not a reason to lose the turn.
		if _, rerr := c.restore(bctx, claim); rerr != nil {
			c.o.Logger.LogAttrs(ctx, slog.LevelWarn, "restoring the entry token after a refused value failed",
				slog.String("room", claim.Room), slog.String("error", rerr.Error()))
		}
		return Invalid, &StoreError{Err: err}
	case err == nil, pgstore.IsOutcome(err):
		if _, rerr := c.o.Slots.Release(bctx, claim); rerr != nil {
			c.o.Logger.LogAttrs(ctx, slog.LevelWarn, "release failed; the slot frees when its in-flight deadline passes",
				slog.String("room", claim.Room), slog.String("error", rerr.Error()))
		}
		return "", nil
	}
	restored, rerr := c.restore(bctx, claim)
	c.o.Logger.LogAttrs(ctx, slog.LevelWarn, "order failed for an infrastructure reason",
		slog.String("room", claim.Room), slog.Bool("token_restored", restored), slog.String("error", err.Error()))
	if rerr != nil || !restored {
		return Unavailable, ErrEntryLost
	}
	return Unavailable, ErrUnavailable
}

// outcome names the end of a transaction that ended with a business
// answer (err is nil or a pgstore outcome).
func outcome(o pgstore.Order, err error) (Result, error) {
	switch {
	case err == nil:
		return Result{Outcome: Placed, Order: o}, nil
	case errors.Is(err, pgstore.ErrOutOfStock):
		return Result{Outcome: OutOfStock}, err
	case errors.Is(err, pgstore.ErrProductNotFound):
		return Result{Outcome: ProductNotFound}, err
	case errors.Is(err, pgstore.ErrUserNotFound):
		// A valid token for a user the database no longer has.
		return Result{Outcome: UnknownUser}, ErrUnknownUser
	}
	return Result{Outcome: Refused}, &RefusedError{Err: err}
}

// restore gives the token back, retrying while Redis is briefly
// unreachable (an overloaded moment must not cost the user their turn).
func (c *Checkout) restore(ctx context.Context, claim queue.Claim) (bool, error) {
	var err error
	for wait := 50 * time.Millisecond; ; wait *= 2 {
		var ok bool
		if ok, err = c.o.Slots.Restore(ctx, claim, restoreGrace); !errors.Is(err, queue.ErrUnavailable) {
			return ok, err
		}
		select {
		case <-ctx.Done():
			return false, err
		case <-time.After(wait):
		}
	}
}
