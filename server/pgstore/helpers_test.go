package pgstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"waitingroom/server/pgstore"
	"waitingroom/server/pgstore/pgtest"
)

// testStore is a Store on its own fresh database with its own registry.
type testStore struct {
	*pgstore.Store
	url string
	reg *prometheus.Registry
}

func newStore(tb testing.TB, opts pgstore.Options) testStore {
	tb.Helper()
	return newStoreAt(tb, pgtest.URL(tb), opts)
}

// newStoreAt opens a store on url (pgtest.DatabaseURL for a test that acts
// on the whole database).
func newStoreAt(tb testing.TB, url string, opts pgstore.Options) testStore {
	tb.Helper()
	reg := prometheus.NewRegistry()
	opts.Registerer = reg
	return testStore{Store: mustOpen(tb, url, opts), url: url, reg: reg}
}

func mustOpen(tb testing.TB, url string, opts pgstore.Options) *pgstore.Store {
	tb.Helper()
	s, err := pgstore.Open(tb.Context(), url, opts)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

func mustSeed(tb testing.TB, s *pgstore.Store, o pgstore.SeedOptions) pgstore.SeedResult {
	tb.Helper()
	res, err := s.Seed(tb.Context(), o)
	if err != nil {
		tb.Fatalf("Seed(%+v): %v", o, err)
	}
	return res
}

func mustUserID(tb testing.TB, s *pgstore.Store, loginID string) int64 {
	tb.Helper()
	id, _, err := s.Credentials(tb.Context(), loginID)
	if err != nil {
		tb.Fatalf("Credentials(%q): %v", loginID, err)
	}
	return id
}

func mustStock(tb testing.TB, s *pgstore.Store, productID int64) int64 {
	tb.Helper()
	p, err := s.Product(tb.Context(), productID)
	if err != nil {
		tb.Fatalf("Product(%d): %v", productID, err)
	}
	return p.Stock
}

// mustConnect opens a plain connection, outside the Store, for inspecting or
// disturbing a database.
func mustConnect(tb testing.TB, url string) *pgx.Conn {
	tb.Helper()
	conn, err := pgx.Connect(tb.Context(), url)
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	tb.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func mustCount(tb testing.TB, conn *pgx.Conn, query string, args ...any) int64 {
	tb.Helper()
	var n int64
	if err := conn.QueryRow(tb.Context(), query, args...).Scan(&n); err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
	return n
}

var sentinels = []error{
	pgstore.ErrUserNotFound, pgstore.ErrProductNotFound,
	pgstore.ErrOutOfStock, pgstore.ErrInvalidQuantity,
}

// isSentinel reports whether err is one of the business outcomes.
func isSentinel(err error) bool {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// histogramCount reads the sample count of the unlabelled histogram name.
func histogramCount(tb testing.TB, reg *prometheus.Registry, name string) uint64 {
	tb.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatalf("Gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	tb.Fatalf("histogram %s not registered", name)
	return 0
}

// poolGauge reads waitingroom_db_pool_connections{state=state}.
func poolGauge(tb testing.TB, reg *prometheus.Registry, state string) float64 {
	tb.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatalf("Gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "waitingroom_db_pool_connections" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "state" && l.GetValue() == state {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	tb.Fatalf("waitingroom_db_pool_connections{state=%q} missing", state)
	return 0
}
