package store_test

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/momopay/momopay/internal/store"
	"github.com/momopay/momopay/internal/testdb"
)

// TestParseURL: PostgreSQL is recognised in every form people write it;
// anything that only looks like an address is refused, never taken as a
// SQLite file name.
func TestParseURL(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in      string
		dialect store.Dialect
		target  string
		err     string
	}{
		{"momopay.db", store.SQLite, "momopay.db", ""},
		{"/var/lib/momopay/data.db", store.SQLite, "/var/lib/momopay/data.db", ""},
		{"sqlite:data.db", store.SQLite, "data.db", ""},
		{"sqlite:///tmp/data.db", store.SQLite, "/tmp/data.db", ""},
		{"data/x=1.db", store.SQLite, "data/x=1.db", ""},
		{"postgres://u@h:5432/db", store.Postgres, "postgres://u@h:5432/db", ""},
		{"postgresql://u@h/db?sslmode=disable", store.Postgres, "postgresql://u@h/db?sslmode=disable", ""},
		{"host=127.0.0.1 user=postgres dbname=x", store.Postgres, "host=127.0.0.1 user=postgres dbname=x", ""},
		{"dbname=x", store.Postgres, "dbname=x", ""},
		{"foo=bar", "", "", `"foo" is not a PostgreSQL parameter`},
		{"mysql://u@h/db", "", "", `unsupported database URL scheme "mysql"`},
		{"sqlite:", "", "", "empty database address"},
		{"", "", "", "empty database address"},
	}
	for _, c := range cases {
		d, target, err := store.ParseURL(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseURL(%q): %v, want an error with %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || d != c.dialect || target != c.target {
			t.Errorf("ParseURL(%q) = %s %q %v, want %s %q", c.in, d, target, err, c.dialect, c.target)
		}
	}
}

// TestOpenExisting: a missing SQLite file is a NoDatabaseError naming the
// absolute path, and is not created; Open creates it, owner-only.
func TestOpenExisting(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.db")
	_, err := store.OpenExisting(t.Context(), "sqlite:"+path)
	var missing *store.NoDatabaseError
	if !errors.As(err, &missing) || missing.Path != path {
		t.Fatalf("OpenExisting of a missing file: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("OpenExisting created the file: %v", err)
	}
	db, err := store.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("Open created %v %v, want mode 0600", st.Mode(), err)
	}
	if db, err = store.OpenExisting(t.Context(), path); err != nil {
		t.Fatalf("OpenExisting of an existing file: %v", err)
	}
	db.Close()
}

// TestSQLiteWALShrinks: a burst of writes grows the WAL file past 64 MiB;
// once checkpointed, the next write starts it over and cuts it back to
// 64 MiB at most (journal_size_limit), instead of keeping the burst's size.
func TestSQLiteWALShrinks(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.db")
	db, err := store.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := t.Context()
	if _, err := db.ExecContext(ctx, `CREATE TABLE burst (b BLOB)`); err != nil {
		t.Fatal(err)
	}
	// 80 MiB in one transaction: the WAL holds all of it until it commits.
	if _, err := db.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 80)
		INSERT INTO burst SELECT randomblob(1048576) FROM n`); err != nil {
		t.Fatal(err)
	}
	wal := func() int64 {
		st, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	if n := wal(); n < 80<<20 {
		t.Fatalf("WAL after the burst: %d bytes, want over 80 MiB", n)
	}
	if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM burst`); err != nil {
		t.Fatal(err)
	}
	if n := wal(); n > 64<<20 {
		t.Errorf("WAL after it started over: %d bytes, want at most 64 MiB", n)
	}
}

// TestOpenMissingPostgresDatabase: a database that does not exist is named
// with what to do, since momopay creates tables, not databases.
func TestOpenMissingPostgresDatabase(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(testdb.URL(t, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	u.Path += "_missing"
	_, err = store.Open(t.Context(), u.String())
	if err == nil || !strings.Contains(err.Error(), "create it first") {
		t.Fatalf("Open of a missing database: %v", err)
	}
}

// TestSchemaNewerThanTheBuild: a database migrated by a newer momopay (a
// binary rolled back after an upgrade) is told apart, for serve's warning
// and migrate's answer; before, migrate said it was up to date.
func TestSchemaNewerThanTheBuild(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, engine string) {
		db, err := store.Open(t.Context(), testdb.URL(t, engine))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		m, err := db.ApplyMigrations(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(t.Context(), `INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, TRUE)`, m.Version+1); err != nil {
			t.Fatal(err)
		}
		got, err := db.ApplyMigrations(t.Context())
		if err != nil || !got.Newer() || got.Known != m.Version || !strings.Contains(got.NewerWarning(), "newer than this build's") {
			t.Fatalf("a newer schema: %+v %v", got, err)
		}
		if m.Newer() {
			t.Errorf("this build's own schema reads as newer: %+v", m)
		}
	})
}
