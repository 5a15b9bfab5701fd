package store_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/momopay/momopay/internal/store"
	"github.com/momopay/momopay/internal/testdb"
)

// TestTransactionOutlivesDroppedConnections: PostgreSQL ends every idle
// connection of the pool (a server restart, a failover, an idle timeout in
// between), then a transaction is asked for. database/sql retries a broken
// pooled connection by itself only when it is not pinned; InTx pins its
// connection (ConnOf), so it must take another itself rather than fail the
// request for a connection nobody needed, however many of them broke.
func TestTransactionOutlivesDroppedConnections(t *testing.T) {
	url := testdb.URL(t, "postgres")
	db := openURL(t, url)
	ctx := context.Background()
	db.SetMaxIdleConns(4)

	// Fill the pool with idle connections, each used within the last
	// second as on a busy service (pgx pings a connection idle for longer
	// before handing it out): four held at once, given back, twice.
	for range 2 {
		var held []*sql.Conn
		for range 4 {
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.PingContext(ctx); err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
		}
		for _, c := range held {
			c.Close()
		}
	}

	admin, err := sql.Open("pgx", testdb.DefaultAdminURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var name string
	if err := db.QueryRowContext(ctx, `SELECT current_database()`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	var ended int
	if err := admin.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = $1`,
		name).Scan(&ended); err != nil {
		t.Fatal(err)
	}
	if ended < 4 {
		t.Fatalf("ended %d connections, want the pool's 4 at least", ended)
	}

	// One after another: the first finds every idle connection broken.
	for i := range 4 {
		err := db.InTx(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `UPDATE merchants SET name = name WHERE FALSE`)
			return err
		})
		if err != nil {
			t.Errorf("transaction %d after the connections were dropped: %v", i, err)
		}
	}
}

// TestRefusedConnectionIsUnavailable: PostgreSQL refusing new connections
// to the database (ALLOW_CONNECTIONS false, as during maintenance), with
// the pool's connections ended: the error a query then gets is one the
// API answers with 503, not 500.
func TestRefusedConnectionIsUnavailable(t *testing.T) {
	url := testdb.URL(t, "postgres")
	db := openURL(t, url)
	ctx := context.Background()
	var name string
	if err := db.QueryRowContext(ctx, `SELECT current_database()`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("pgx", testdb.DefaultAdminURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	db.Pool().Reset() // the next query needs a new connection
	quoted := `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
	if _, err := admin.ExecContext(ctx, `ALTER DATABASE `+quoted+` ALLOW_CONNECTIONS false`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.ExecContext(context.Background(), `ALTER DATABASE `+quoted+` ALLOW_CONNECTIONS true`) })
	if _, err := admin.ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, name); err != nil {
		t.Fatal(err)
	}
	err = db.QueryRowContext(ctx, `SELECT 1`).Scan(new(int))
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); !ok || pgErr.Code != "55000" {
		t.Fatalf("the query got %v, want PostgreSQL's refusal of a new connection (55000)", err)
	}
	if err == nil {
		t.Fatal("a query went through while the database refused connections")
	}
	if !store.Unavailable(err) {
		t.Errorf("refused connection: %v; want it judged unavailable", err)
	}
}
