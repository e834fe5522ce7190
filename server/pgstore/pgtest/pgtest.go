package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultURL is the server used when the environment names none
// (AdminURL).
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// timeout bounds each administrative step (connect, create, drop).
const timeout = 30 * time.Second

// AdminURL returns the URL of the server's administrative database: the
// database named by WR_TEST_DATABASE_URL, else DATABASE_URL, else DefaultURL.
// Tests use it to create and drop databases and to act on a test database
// from outside (terminate its sessions, refuse connections).
func AdminURL() string {
	for _, name := range []string{"WR_TEST_DATABASE_URL", "DATABASE_URL"} {
		if v := os.Getenv(name); v != "" {
			return v
		}
	}
	return DefaultURL
}

// SharedDatabase is the database URL's schemas are made in. It is created
// when missing and kept: each test drops its own schema.
const SharedDatabase = "wr_test_schemas"

// URL creates a fresh, empty schema wr_test_<unix time>_<random hex> in
// SharedDatabase, drops it (with everything in it) when tb's test ends, and
// returns a URL whose connections have it as their only search_path: the
// tables a test's migrations create and everything it reads are its own.
// Schemas left by a test process that was killed are dropped an hour on.
// The role in AdminURL must be allowed to create databases (for the first
// use) and schemas.
func URL(tb testing.TB) string {
	tb.Helper()
	shared, err := sharedURL()
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn := connect(ctx, tb, shared)
	defer conn.Close(ctx)
	name := fmt.Sprintf("wr_test_%d_%s", time.Now().Unix(), randomHex())
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+ident); err != nil {
		tb.Fatalf("pgtest: create schema %s: %v", name, err)
	}
	atEnd(tb, shared, "DROP SCHEMA IF EXISTS "+ident+" CASCADE")
	u, err := withSearchPath(shared, name)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	return u
}

// DatabaseURL creates a fresh database wr_test_<random hex> on the test
// server, drops it (terminating any session still connected) when tb's test
// ends, and returns a URL pointing at it. The role in AdminURL must be
// allowed to create databases.
func DatabaseURL(tb testing.TB) string {
	tb.Helper()
	admin := AdminURL()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn := connect(ctx, tb, admin)
	defer conn.Close(ctx)
	name := "wr_test_" + randomHex()
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		tb.Fatalf("pgtest: create database %s: %v", name, err)
	}
	atEnd(tb, admin, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)")
	u, err := withDatabase(admin, name)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	return u
}

// atEnd runs sql (a DROP) on url when tb's test ends; a failure fails it.
func atEnd(tb testing.TB, url, sql string) {
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			tb.Errorf("pgtest: %s: connect: %v", sql, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql); err != nil {
			tb.Errorf("pgtest: %s: %v", sql, err)
		}
	})
}

// connect connects to url or fails tb saying how to get a server.
func connect(ctx context.Context, tb testing.TB, url string) *pgx.Conn {
	tb.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Fatal(unreachable(url, err))
	}
	return conn
}

// unreachable is the error of a test server that cannot be reached: it
// says how to get one.
func unreachable(url string, err error) error {
	return fmt.Errorf("pgtest: cannot connect to the test Postgres at %s: %w\n"+
		"Set WR_TEST_DATABASE_URL (or DATABASE_URL) to a reachable server, or run the tests with `make test`, which starts one",
		redact(url), err)
}

func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// shared is SharedDatabase's URL, once the database exists and its stale
// schemas are gone: made once per process.
var shared struct {
	once sync.Once
	url  string
	err  error
}

func sharedURL() (string, error) {
	shared.once.Do(func() { shared.url, shared.err = prepareShared() })
	return shared.url, shared.err
}

// prepareShared creates SharedDatabase when missing (another test process
// may be doing the same: its win is as good) and drops the schemas of
// test processes that ended an hour ago or more without dropping them.
func prepareShared() (string, error) {
	admin := AdminURL()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", unreachable(admin, err)
	}
	defer conn.Close(ctx)
	exists := func() (bool, error) {
		var n int
		err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", SharedDatabase).Scan(&n)
		return n > 0, err
	}
	ok, err := exists()
	if err == nil && !ok {
		if _, cerr := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{SharedDatabase}.Sanitize()); cerr != nil {
			// Created meanwhile by another process, or a real failure.
			if ok, err = exists(); err == nil && !ok {
				err = cerr
			}
		}
	}
	if err != nil {
		return "", fmt.Errorf("pgtest: create database %s: %w", SharedDatabase, err)
	}
	u, err := withDatabase(admin, SharedDatabase)
	if err != nil {
		return "", fmt.Errorf("pgtest: %w", err)
	}
	return u, dropStale(ctx, u)
}

// dropStale drops the test schemas made an hour ago or more.
func dropStale(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("pgtest: connect to %s: %w", SharedDatabase, err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT nspname FROM pg_namespace WHERE nspname LIKE 'wr\_test\_%'`)
	if err != nil {
		return fmt.Errorf("pgtest: list schemas: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("pgtest: list schemas: %w", err)
	}
	cutoff := time.Now().Add(-time.Hour).Unix()
	for _, n := range names {
		at, _, _ := strings.Cut(strings.TrimPrefix(n, "wr_test_"), "_")
		if sec, err := strconv.ParseInt(at, 10, 64); err == nil && sec < cutoff {
			// Another process may drop it at the same time: IF EXISTS.
			_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{n}.Sanitize()+" CASCADE")
		}
	}
	return nil
}

// withSearchPath returns connString with search_path set to schema alone:
// pgx sends a setting it does not know itself as a run-time parameter.
func withSearchPath(connString, schema string) (string, error) {
	if strings.HasPrefix(connString, "postgres://") || strings.HasPrefix(connString, "postgresql://") {
		u, err := url.Parse(connString)
		if err != nil {
			return "", fmt.Errorf("parse %s: %w", redact(connString), err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return connString + " search_path=" + schema, nil
}

// withDatabase returns connString with its database replaced by name. It
// accepts both forms pgx does: a postgres:// URL and a keyword/value string.
func withDatabase(connString, name string) (string, error) {
	if strings.HasPrefix(connString, "postgres://") || strings.HasPrefix(connString, "postgresql://") {
		u, err := url.Parse(connString)
		if err != nil {
			return "", fmt.Errorf("parse %s: %w", redact(connString), err)
		}
		u.Path = "/" + name
		u.RawPath = ""
		return u.String(), nil
	}
	// In a keyword/value string the last setting of a keyword wins.
	return connString + " dbname=" + name, nil
}

var kvPassword = regexp.MustCompile(`password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)`)

// redact hides the password of a connection string for error messages.
func redact(connString string) string {
	if u, err := url.Parse(connString); err == nil && u.Scheme != "" {
		return u.Redacted()
	}
	return kvPassword.ReplaceAllString(connString, "password=xxxxx")
}
