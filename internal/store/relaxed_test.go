package store_test

import (
	"testing"

	"github.com/momopay/momopay/internal/store"
)

// TestRelaxedCommitStaysInItsStatement checks the promise RelaxedCommit's
// users rely on: the statement that carries it commits asynchronously, and
// the pooled connection's next statements commit durably again. Were the
// setting to outlive the statement, every later payment written on that
// connection could be lost with the database server.
func TestRelaxedCommitStaysInItsStatement(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := open(t, "postgres")
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `CREATE TABLE relaxed_probe (n INT)`); err != nil {
		t.Fatal(err)
	}
	var during string
	if err := conn.QueryRowContext(ctx, `WITH `+store.RelaxedCommit+`, ins AS (INSERT INTO relaxed_probe SELECT 1 FROM relaxed RETURNING n)
		SELECT current_setting('synchronous_commit') FROM ins`).Scan(&during); err != nil {
		t.Fatal(err)
	}
	var after string
	if err := conn.QueryRowContext(ctx, `SHOW synchronous_commit`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if during != "off" || after != "on" {
		t.Errorf("synchronous_commit during the statement %q (want off), after it on the same connection %q (want on)", during, after)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM relaxed_probe`).Scan(&n); err != nil || n != 1 {
		t.Errorf("the relaxed statement's row: %d (%v), want 1", n, err)
	}
}
