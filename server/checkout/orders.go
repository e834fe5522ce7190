package checkout

import (
	"context"
	"errors"
	"strconv"

	"waitingroom/server/pgstore"
)

// MaxOrdersRead is how many of a user's orders Orders returns at most.
const MaxOrdersRead = 20

// OrderReader is what reading a user's own orders needs from Postgres
// (pgstore.Store).
type OrderReader interface {
	UserOrders(ctx context.Context, userID int64, room string, limit int) ([]pgstore.Order, error)
}

// ErrNoOrderReader: the Checkout was built without a way to read orders
// (Options.Orders nil and a Store that cannot read them).
var ErrNoOrderReader = errors.New("checkout: no order reader")

// Orders returns the orders user (the numeric user id of a token's
// subject) placed in room, newest first, at most MaxOrdersRead. A store
// error is returned as is.
func (c *Checkout) Orders(ctx context.Context, user, room string) ([]pgstore.Order, error) {
	if c.o.Orders == nil {
		return nil, ErrNoOrderReader
	}
	uid, err := strconv.ParseInt(user, 10, 64)
	if err != nil {
		return []pgstore.Order{}, nil // no database user: no orders
	}
	return c.o.Orders.UserOrders(ctx, uid, room, MaxOrdersRead)
}
