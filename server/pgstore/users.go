package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Credentials reads the user row for login: its id and BCrypt hash. The
// pooled connection is released BEFORE Credentials returns, so the caller's
// BCrypt (~75 ms at cost 10) never holds a database connection. An unknown
// loginID returns ErrUserNotFound.
func (s *Store) Credentials(ctx context.Context, loginID string) (userID int64, passwordHash []byte, err error) {
	conn, release, err := s.acquire(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("pgstore: credentials: %w", err)
	}
	defer release()

	var hash string
	err = conn.QueryRow(ctx,
		`SELECT id, password_hash FROM users WHERE login_id = $1`, loginID,
	).Scan(&userID, &hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil, ErrUserNotFound
	}
	if err != nil {
		return 0, nil, mapErr("credentials", err)
	}
	return userID, []byte(hash), nil
}
