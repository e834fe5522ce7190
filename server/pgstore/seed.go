package pgstore

import (
	"context"
	"errors"
	"fmt"
)

// SeedOptions describes the demo data: Users users sharing one BCrypt hash,
// and Products products with Stock each.
type SeedOptions struct {
	Users        int
	PasswordHash []byte
	Products     int
	Stock        int64
}

// SeedResult reports what Seed wrote: Users rows inserted or updated, and
// products newly created.
type SeedResult struct {
	Users, ProductsCreated int
}

// Seed creates users user1…userN (login id "userK") all with o.PasswordHash,
// replacing the hash of those that already exist, and products with ids
// 1…M named "Demo product K", price 1000·K cents and stock o.Stock. Existing
// products are left alone, stock included. Both run as one set-based
// statement each, in one transaction: 10,000 users take well under a second.
func (s *Store) Seed(ctx context.Context, o SeedOptions) (SeedResult, error) {
	switch {
	case o.Users < 0 || o.Products < 0 || o.Stock < 0:
		return SeedResult{}, errors.New("pgstore: seed: users, products and stock must not be negative")
	case o.Users > 0 && len(o.PasswordHash) == 0:
		return SeedResult{}, errors.New("pgstore: seed: a password hash is required to seed users")
	}
	conn, release, err := s.acquire(ctx)
	if err != nil {
		return SeedResult{}, fmt.Errorf("pgstore: seed: %w", err)
	}
	defer release()

	tx, err := conn.Begin(ctx)
	if err != nil {
		return SeedResult{}, fmt.Errorf("pgstore: seed: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // no-op after Commit

	users, err := tx.Exec(ctx,
		`INSERT INTO users (login_id, password_hash)
		 SELECT 'user' || g, $2 FROM generate_series(1, $1::int) AS g
		 ON CONFLICT (login_id) DO UPDATE SET password_hash = EXCLUDED.password_hash`,
		o.Users, string(o.PasswordHash))
	if err != nil {
		return SeedResult{}, fmt.Errorf("pgstore: seed: users: %w", err)
	}
	products, err := tx.Exec(ctx,
		`INSERT INTO products (id, name, price, stock)
		 SELECT g, 'Demo product ' || g, 1000 * g, $2 FROM generate_series(1, $1::bigint) AS g
		 ON CONFLICT (id) DO NOTHING`,
		o.Products, o.Stock)
	if err != nil {
		return SeedResult{}, fmt.Errorf("pgstore: seed: products: %w", err)
	}
	// Explicit ids bypass the sequence; move it past them so that a product
	// inserted without an id does not collide.
	if _, err := tx.Exec(ctx,
		`SELECT setval(pg_get_serial_sequence('products', 'id'), COALESCE(max(id), 0) + 1, false) FROM products`,
	); err != nil {
		return SeedResult{}, fmt.Errorf("pgstore: seed: bump product sequence: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return SeedResult{}, fmt.Errorf("pgstore: seed: commit: %w", err)
	}
	return SeedResult{Users: int(users.RowsAffected()), ProductsCreated: int(products.RowsAffected())}, nil
}
