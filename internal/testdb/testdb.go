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

	_ "github.com/jackc/pgx/v5/stdlib"
)

// Engines lists the engines every storage test runs on.
var Engines = []string{"sqlite", "postgres"}

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
