package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultURL is the server used when neither WR_TEST_DATABASE_URL nor
// DATABASE_URL is set.
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

// URL creates a fresh database wr_test_<random hex> on the test server,
// drops it (terminating any session still connected) when tb's test ends,
// and returns a URL pointing at it. The role in AdminURL must be allowed to
// create databases.
func URL(tb testing.TB) string {
	tb.Helper()
	admin := AdminURL()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Fatalf("pgtest: cannot connect to the test Postgres at %s: %v\n"+
			"Set WR_TEST_DATABASE_URL (or DATABASE_URL) to a reachable server, or run the tests with `make test`, which starts one.",
			redact(admin), err)
	}
	defer conn.Close(ctx)

	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	name := "wr_test_" + hex.EncodeToString(b[:])
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		tb.Fatalf("pgtest: create database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			tb.Errorf("pgtest: drop database %s: connect: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	u, err := withDatabase(admin, name)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	return u
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
