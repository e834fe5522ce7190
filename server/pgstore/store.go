package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// DefaultPoolSize is the pool size used when Options.PoolSize is 0.
const DefaultPoolSize = 40

// Business outcomes. Any other error returned by a Store is an infrastructure
// failure.
var (
	ErrUserNotFound    = errors.New("pgstore: user not found")
	ErrProductNotFound = errors.New("pgstore: product not found")
	ErrOutOfStock      = errors.New("pgstore: out of stock")
	ErrInvalidQuantity = errors.New("pgstore: quantity must be between 1 and 2147483647")
)

// IsOutcome reports whether err is one of the business outcomes above, or
// a value the database refused (ErrInvalidInput): the database answered,
// the request was refused. Any other non-nil error is an infrastructure
// failure.
func IsOutcome(err error) bool {
	return errors.Is(err, ErrOutOfStock) || errors.Is(err, ErrProductNotFound) ||
		errors.Is(err, ErrUserNotFound) || errors.Is(err, ErrInvalidQuantity) ||
		errors.Is(err, ErrInvalidInput)
}

// Options configures Open.
type Options struct {
	PoolSize   int32                 // connections at most; DefaultPoolSize if 0
	Registerer prometheus.Registerer // where metrics are registered; nil = don't register
	Logger     *slog.Logger          // nil = slog.Default()
}

// Store is the Postgres store. It is safe for concurrent use.
type Store struct {
	pool      *pgxpool.Pool
	metrics   *metrics
	log       *slog.Logger
	closeOnce sync.Once

	acquires atomic.Int64 // pool acquires, all time
	waitNs   atomic.Int64 // their total wait
	heldNs   atomic.Int64 // connections' total hold, acquire to release
	busy     atomic.Int64 // acquires begun and not yet released: held or waiting
	releases atomic.Int64 // connections released, all time
	size     int          // the pool's size (Options.PoolSize)
}

// AcquireStats returns the pool acquires made so far and their total wait,
// for callers that difference them over a period (the admission limit
// controller's pool wait signal).
func (s *Store) AcquireStats() (acquires int64, wait time.Duration) {
	return s.acquires.Load(), time.Duration(s.waitNs.Load())
}

// HoldStats returns the connections' total hold time so far (acquire to
// release, counted at release) and the pool's size: differenced over a
// period, held ÷ (size × period) is the pool's utilization, the admission
// limit controller's capacity signal.
func (s *Store) HoldStats() (held time.Duration, size int) {
	return time.Duration(s.heldNs.Load()), s.size
}

// Busy returns the connections held or waited for right now and the
// pool's size: what the pool gate (adaptive.PoolGate) reads each tick.
func (s *Store) Busy() (busy, size int) { return int(s.busy.Load()), s.size }

// Releases returns the connections released so far.
func (s *Store) Releases() int64 { return s.releases.Load() }

// Open connects to databaseURL, checks the connection and applies pending
// migrations. Several processes may Open the same database at once.
func Open(ctx context.Context, databaseURL string, opts Options) (*Store, error) {
	if opts.PoolSize < 0 {
		return nil, fmt.Errorf("pgstore: pool size %d must not be negative", opts.PoolSize)
	}
	if opts.PoolSize == 0 {
		opts.PoolSize = DefaultPoolSize
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("pgstore: parse database URL: %w", err)
	}
	cfg.MaxConns = opts.PoolSize
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: create pool: %w", err)
	}
	s := &Store{pool: pool, metrics: newMetrics(pool), log: opts.Logger, size: int(opts.PoolSize)}
	if err := s.metrics.register(opts.Registerer); err != nil {
		pool.Close()
		return nil, err
	}
	if err := s.Ping(ctx); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the pool, waiting for acquired connections to be released, and
// unregisters the metrics. It is safe to call more than once.
func (s *Store) Close() {
	s.closeOnce.Do(func() {
		s.pool.Close()
		s.metrics.unregister()
	})
}

// Ping checks that a pooled connection can reach the database.
func (s *Store) Ping(ctx context.Context) error {
	conn, release, err := s.acquire(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: ping: %w", err)
	}
	defer release()
	if err := conn.Ping(ctx); err != nil {
		return fmt.Errorf("pgstore: ping: %w", err)
	}
	return nil
}

// acquire takes a connection from the pool, recording the wait, and returns
// the function that gives it back, recording how long it was held. Every
// method goes through acquire so that the hold histogram covers all database
// use. release may be called more than once; only the first call counts.
func (s *Store) acquire(ctx context.Context) (*pgxpool.Conn, func(), error) {
	start := time.Now()
	s.busy.Add(1)
	conn, err := s.pool.Acquire(ctx)
	acquired := time.Now()
	s.metrics.acquireWait.Observe(acquired.Sub(start).Seconds())
	s.acquires.Add(1)
	s.waitNs.Add(int64(acquired.Sub(start)))
	if err != nil {
		s.busy.Add(-1)
		return nil, nil, fmt.Errorf("acquire connection: %w", err)
	}
	released := false
	release := func() {
		if released {
			return
		}
		released = true
		held := time.Since(acquired)
		conn.Release()
		s.heldNs.Add(int64(held))
		s.releases.Add(1)
		s.busy.Add(-1)
		s.metrics.hold.Observe(held.Seconds())
	}
	return conn, release, nil
}
