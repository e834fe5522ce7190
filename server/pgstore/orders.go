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
}

// Order is a placed order.
type Order struct {
	ID, UserID, ProductID int64
	Quantity              int
	Room                  string
	CreatedAt             time.Time
}

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

	tag, err := tx.Exec(ctx,
		`UPDATE products SET stock = stock - $1 WHERE id = $2 AND stock >= $1`,
		int64(r.Quantity), r.ProductID)
	if err != nil {
		return Order{}, mapErr("place order: update stock", err)
	}
	if tag.RowsAffected() == 0 {
		var exists bool
		err := tx.QueryRow(ctx,
			`SELECT EXISTS (SELECT 1 FROM products WHERE id = $1)`, r.ProductID,
		).Scan(&exists)
		switch {
		case err != nil:
			return Order{}, mapErr("place order: check product", err)
		case !exists:
			return Order{}, ErrProductNotFound
		default:
			return Order{}, ErrOutOfStock
		}
	}

	o := Order{UserID: r.UserID, ProductID: r.ProductID, Quantity: r.Quantity, Room: r.Room}
	err = tx.QueryRow(ctx,
		`INSERT INTO orders (user_id, product_id, quantity, room)
		 VALUES ($1, $2, $3, $4) RETURNING id, created_at`,
		r.UserID, r.ProductID, r.Quantity, r.Room,
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
