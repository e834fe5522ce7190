package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Product is a product and its remaining stock. Price is in cents.
type Product struct {
	ID    int64  `json:"id"`
	Name  string `json:"name"`
	Price int64  `json:"price"`
	Stock int64  `json:"stock"`
}

// OrderRequest asks to buy Quantity of ProductID for UserID, admitted
// through Room.
type OrderRequest struct {
	UserID, ProductID int64
	Quantity          int
	Room              string
	// Delay, when positive, is slept inside the transaction (pg_sleep),
	// holding the connection: the fault injection for tests and demos.
	Delay time.Duration
	// RowDelay, when positive, is slept after the stock update, inside
	// the product's row lock: concurrent orders of the product wait for
	// it (a hot row). Fault injection too.
	RowDelay time.Duration
}

// Order is a placed order. ProductName and UnitPrice (cents) are the
// product's at the time of the order.
type Order struct {
	ID, UserID, ProductID int64
	ProductName           string
	Quantity              int
	UnitPrice             int64
	Room                  string
	CreatedAt             time.Time
}

// Total is what the order cost, in cents.
func (o Order) Total() int64 { return o.UnitPrice * int64(o.Quantity) }

// pgForeignKeyViolation is SQLSTATE foreign_key_violation.
const pgForeignKeyViolation = "23503"

// Product returns the product with the given id, or ErrProductNotFound.
func (s *Store) Product(ctx context.Context, id int64) (Product, error) {
	conn, release, err := s.acquire(ctx)
	if err != nil {
		return Product{}, fmt.Errorf("pgstore: product: %w", err)
	}
	defer release()

	var p Product
	err = conn.QueryRow(ctx,
		`SELECT id, name, price, stock FROM products WHERE id = $1`, id,
	).Scan(&p.ID, &p.Name, &p.Price, &p.Stock)
	if errors.Is(err, pgx.ErrNoRows) {
		return Product{}, ErrProductNotFound
	}
	if err != nil {
		return Product{}, mapErr("product", err)
	}
	return p, nil
}

// PlaceOrder decrements the product's stock under its row lock and inserts
// the order, in one transaction. Business refusals are ErrInvalidQuantity,
// ErrProductNotFound, ErrOutOfStock and ErrUserNotFound (r.UserID has no
// user row); in each case nothing was written. Any other error is an
// infrastructure failure, returned wrapped: the order was not committed and
// may be retried.
func (s *Store) PlaceOrder(ctx context.Context, r OrderRequest) (Order, error) {
	if r.Quantity <= 0 || r.Quantity > math.MaxInt32 {
		return Order{}, ErrInvalidQuantity
	}
	conn, release, err := s.acquire(ctx)
	if err != nil {
		return Order{}, fmt.Errorf("pgstore: place order: %w", err)
	}
	defer release()

	tx, err := conn.Begin(ctx)
	if err != nil {
		return Order{}, fmt.Errorf("pgstore: place order: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // no-op after Commit

	if r.Delay > 0 {
		if _, err := tx.Exec(ctx, `SELECT pg_sleep($1)`, r.Delay.Seconds()); err != nil {
			return Order{}, fmt.Errorf("pgstore: place order: injected delay: %w", err)
		}
	}

	o := Order{UserID: r.UserID, ProductID: r.ProductID, Quantity: r.Quantity, Room: r.Room}
	err = tx.QueryRow(ctx,
		`UPDATE products SET stock = stock - $1 WHERE id = $2 AND stock >= $1 RETURNING name, price`,
		int64(r.Quantity), r.ProductID).Scan(&o.ProductName, &o.UnitPrice)
	if errors.Is(err, pgx.ErrNoRows) {
		return Order{}, noStockReason(ctx, tx, r.ProductID)
	}
	if err != nil {
		return Order{}, mapErr("place order: update stock", err)
	}
	if r.RowDelay > 0 {
		if _, err := tx.Exec(ctx, `SELECT pg_sleep($1)`, r.RowDelay.Seconds()); err != nil {
			return Order{}, fmt.Errorf("pgstore: place order: injected row delay: %w", err)
		}
	}

	err = tx.QueryRow(ctx,
		`INSERT INTO orders (user_id, product_id, quantity, room, unit_price)
		 VALUES ($1, $2, $3, $4, $5) RETURNING id, created_at`,
		r.UserID, r.ProductID, r.Quantity, r.Room, o.UnitPrice,
	).Scan(&o.ID, &o.CreatedAt)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == pgForeignKeyViolation &&
			pgErr.ConstraintName == "orders_user_id_fkey" {
			return Order{}, ErrUserNotFound
		}
		return Order{}, mapErr("place order: insert", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return Order{}, fmt.Errorf("pgstore: place order: commit: %w", err)
	}
	return o, nil
}

// noStockReason tells, after the stock update matched no row, whether the
// product is missing (ErrProductNotFound) or short (ErrOutOfStock).
func noStockReason(ctx context.Context, tx pgx.Tx, productID int64) error {
	var exists bool
	err := tx.QueryRow(ctx,
		`SELECT EXISTS (SELECT 1 FROM products WHERE id = $1)`, productID,
	).Scan(&exists)
	switch {
	case err != nil:
		return mapErr("place order: check product", err)
	case !exists:
		return ErrProductNotFound
	default:
		return ErrOutOfStock
	}
}

// UserOrders returns at most limit orders that userID placed in room,
// newest first, with each product's name and the unit price paid (the
// product's current price for an order placed before prices were
// recorded). One query on orders_user_id_idx; no orders is an empty slice.
func (s *Store) UserOrders(ctx context.Context, userID int64, room string, limit int) ([]Order, error) {
	conn, release, err := s.acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgstore: user orders: %w", err)
	}
	defer release()

	rows, err := conn.Query(ctx,
		`SELECT o.id, o.product_id, p.name, o.quantity, COALESCE(o.unit_price, p.price), o.created_at
		 FROM orders o JOIN products p ON p.id = o.product_id
		 WHERE o.user_id = $1 AND o.room = $2
		 ORDER BY o.created_at DESC, o.id DESC
		 LIMIT $3`,
		userID, room, limit)
	if err != nil {
		return nil, mapErr("user orders", err)
	}
	out := []Order{}
	for rows.Next() {
		o := Order{UserID: userID, Room: room}
		if err := rows.Scan(&o.ID, &o.ProductID, &o.ProductName, &o.Quantity, &o.UnitPrice, &o.CreatedAt); err != nil {
			rows.Close()
			return nil, mapErr("user orders", err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr("user orders", err)
	}
	return out, nil
}
