// Package testdb gives tests a fresh, migrated momopay database on either
// engine: a temporary SQLite file, or a new PostgreSQL database that is
// dropped afterwards. It is for tests only.
package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"
)

// Engines lists the engines every storage test runs on.
var Engines = []string{"sqlite", "postgres"}

// Each runs fn on every engine, each as a parallel subtest of t named by
// its engine: the one loop every test that covers both engines shares.
func Each(t *testing.T, fn func(t *testing.T, engine string)) {
	t.Helper()
	for _, engine := range Engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			fn(t, engine)
		})
	}
}

// DefaultAdminURL is where tests look for PostgreSQL unless
// MOMOPAY_TEST_POSTGRES_URL says otherwise.
const DefaultAdminURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// URL returns the address of a fresh, empty database of engine for t.
// Without a reachable PostgreSQL the test is skipped, or failed when
// MOMOPAY_REQUIRE_POSTGRES=1 (as CI sets it).
func URL(t testing.TB, engine string) string {
	t.Helper()
	switch engine {
	case "", "sqlite":
		return "sqlite:" + filepath.Join(t.TempDir(), "momopay.db")
	case "postgres":
		return postgresURL(t)
	}
	t.Fatalf("unknown engine %q", engine)
	return ""
}

func postgresURL(t testing.TB) string {
	t.Helper()
	admin := os.Getenv("MOMOPAY_TEST_POSTGRES_URL")
	if admin == "" {
		admin = DefaultAdminURL
	}
	db, err := sql.Open("pgx", admin)
	if err == nil {
		err = db.PingContext(context.Background())
	}
	if err != nil {
		msg := fmt.Sprintf("PostgreSQL not reachable at %s (%v): start it or set MOMOPAY_TEST_POSTGRES_URL", redact(admin), err)
		if os.Getenv("MOMOPAY_REQUIRE_POSTGRES") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg + "; set MOMOPAY_REQUIRE_POSTGRES=1 to fail instead of skipping")
	}
	name := "momopay_test_" + strings.ToLower(rand.Text()[:12])
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		db.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
		db.Close()
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// Listen LISTENs on channel on a connection of pool (held until the test's
// cleanup, so close pool with t.Cleanup, registered before, not defer:
// pgxpool.Close waits for it) and returns heard, which counts the notifications that arrive
// until none has for wait: for tests of which notifications a change sends.
// Quote a channel name that is not a plain identifier ("public.river_insert").
func Listen(t testing.TB, pool *pgxpool.Pool, channel string) (heard func(wait time.Duration) int) {
	t.Helper()
	conn, err := pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Release)
	if _, err := conn.Exec(t.Context(), "LISTEN "+channel); err != nil {
		t.Fatal(err)
	}
	return func(wait time.Duration) int {
		n := 0
		for {
			ctx, cancel := context.WithTimeout(t.Context(), wait)
			_, err := conn.Conn().WaitForNotification(ctx)
			cancel()
			if err != nil {
				return n
			}
			n++
		}
	}
}

// HoldSQLiteWriteLock takes SQLite's write lock on the database at dbURL
// (a path, or sqlite:PATH) from a connection of its own, as another
// process would, and keeps it until the test rolls back on the returned
// connection, or ends. It waits for the lock if the server's background
// work holds it just then (a busy_timeout of 0 made tests fail now and
// then).
func HoldSQLiteWriteLock(t testing.TB, dbURL string) *sql.Conn {
	t.Helper()
	other, err := sql.Open("sqlite", "file:"+strings.TrimPrefix(dbURL, "sqlite:")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	lock, err := other.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Close() })
	if _, err := lock.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	return lock
}
