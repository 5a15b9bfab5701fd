package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/testdb"
)

// stmtDB opens a SQLite database with a table t(k, v) holding rows 1..5
// and returns the writer's one connection.
func stmtDB(t *testing.T) *sql.Conn {
	t.Helper()
	ctx := t.Context()
	db, err := Open(ctx, testdb.URL(t, "sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	for _, q := range []string{
		`CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL UNIQUE)`,
		`INSERT INTO t (k, v) VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e')`,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return conn
}

// begin starts a transaction on conn, rolled back at the end of the test
// unless committed.
func begin(t *testing.T, conn *sql.Conn) *sql.Tx {
	t.Helper()
	tx, err := conn.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	return tx
}

// cacheOf returns the statements conn keeps, by text.
func cacheOf(t *testing.T, conn *sql.Conn) map[string]*cachedStmt {
	t.Helper()
	out := map[string]*cachedStmt{}
	if err := conn.Raw(func(dc any) error {
		c, ok := dc.(*cachedConn)
		if !ok {
			return fmt.Errorf("connection is %T, not a *cachedConn", dc)
		}
		for text, e := range c.byText {
			out[text] = e.Value.(*cachedStmt)
		}
		if len(out) != c.lru.Len() {
			return fmt.Errorf("%d statements by text, %d in the LRU", len(out), c.lru.Len())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func value(t *testing.T, conn *sql.Conn, query string, args ...any) string {
	t.Helper()
	var v string
	if err := conn.QueryRowContext(t.Context(), query, args...).Scan(&v); err != nil {
		t.Fatalf("%s %v: %v", query, args, err)
	}
	return v
}

// TestSQLiteStatementsReused checks that a query run again on a connection
// runs on the statement prepared the first time, with this run's
// arguments, and that an Exec's statement is reused the same way.
func TestSQLiteStatementsReused(t *testing.T) {
	conn := stmtDB(t)
	ctx := t.Context()
	const get = `SELECT v FROM t WHERE k = $1`
	if v := value(t, conn, get, 2); v != "b" {
		t.Fatalf("k=2: %q", v)
	}
	first := cacheOf(t, conn)[get]
	if first == nil {
		t.Fatal("the query's statement is not kept")
	}
	for k, want := range map[int]string{1: "a", 4: "d", 5: "e"} {
		if v := value(t, conn, get, k); v != want {
			t.Fatalf("k=%d: %q, want %q", k, v, want)
		}
	}
	if again := cacheOf(t, conn)[get]; again != first {
		t.Fatal("the query was prepared again")
	}
	// No row: the statement is reset and stays usable.
	if err := conn.QueryRowContext(ctx, get, 99).Scan(new(string)); !errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("k=99: %v", err)
	}

	const set = `UPDATE t SET v = $1 WHERE k = $2`
	for _, v := range []string{"x", "y"} {
		res, err := conn.ExecContext(ctx, set, v, 3)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			t.Fatalf("%d rows updated", n)
		}
	}
	if v := value(t, conn, get, 3); v != "y" {
		t.Fatalf("k=3 after two updates: %q", v)
	}
	if s := cacheOf(t, conn)[set]; s == nil || s.busy {
		t.Fatalf("the update's statement: %+v", s)
	}
}

// TestSQLiteStatementBusy runs a query again, with its own text, inside the
// loop over its rows: the second run cannot use the statement the first
// is still stepping, and both must see their own rows.
func TestSQLiteStatementBusy(t *testing.T) {
	conn := stmtDB(t)
	ctx := t.Context()
	tx := begin(t, conn)
	const q = `SELECT k, v FROM t WHERE k >= $1 ORDER BY k`
	rows, err := tx.QueryContext(ctx, q, 1)
	if err != nil {
		t.Fatal(err)
	}
	var outer, inner []string
	for rows.Next() {
		var k int
		var v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		outer = append(outer, v)
		// The inner query, same text, different argument.
		in, err := tx.QueryContext(ctx, q, 4)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for in.Next() {
			var k int
			var v string
			if err := in.Scan(&k, &v); err != nil {
				t.Fatal(err)
			}
			got = append(got, v)
		}
		if err := in.Close(); err != nil {
			t.Fatal(err)
		}
		inner = append(inner, fmt.Sprint(got))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if fmt.Sprint(outer) != "[a b c d e]" {
		t.Fatalf("outer rows %v", outer)
	}
	for _, got := range inner {
		if got != "[d e]" {
			t.Fatalf("inner rows %v", inner)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if s := cacheOf(t, conn)[q]; s == nil || s.busy {
		t.Fatalf("after the rows closed, the statement: %+v", s)
	}
}

// TestSQLiteStatementsEvicted runs more distinct statements than a
// connection keeps, one of them with its rows open while it is evicted:
// the cache stays at its bound, the open rows read to their end, and every
// statement still answers.
func TestSQLiteStatementsEvicted(t *testing.T) {
	conn := stmtDB(t)
	ctx := t.Context()
	tx := begin(t, conn)
	const open = `SELECT v FROM t ORDER BY k`
	rows, err := tx.QueryContext(ctx, open)
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatal(rows.Err())
	}
	text := func(i int) string { return fmt.Sprintf(`SELECT v || '%d' FROM t WHERE k = $1`, i) }
	for i := range 2 * sqliteStmtsPerConn {
		var v string
		if err := tx.QueryRowContext(ctx, text(i), 1+i%5).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("%c%d", 'a'+i%5, i); v != want {
			t.Fatalf("%q: %q, want %q", text(i), v, want)
		}
	}
	var got []string
	for ok := true; ok; ok = rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[a b c d e]" {
		t.Fatalf("the evicted statement's rows: %v", got)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	cache := cacheOf(t, conn)
	if len(cache) != sqliteStmtsPerConn {
		t.Fatalf("%d statements kept, want %d", len(cache), sqliteStmtsPerConn)
	}
	if cache[open] != nil || cache[text(0)] != nil || cache[text(2*sqliteStmtsPerConn-1)] == nil {
		t.Fatal("the cache did not keep the most recently used")
	}
	if v := value(t, conn, open); v != "a" {
		t.Fatalf("the evicted query again: %q", v)
	}
}

// TestSQLiteStatementErrors checks that a reused statement reports a
// constraint failure as the driver does, and that one interrupted by its
// context returns the context's error; both answer normally afterwards.
func TestSQLiteStatementErrors(t *testing.T) {
	conn := stmtDB(t)
	ctx := t.Context()
	const insert = `INSERT INTO t (k, v) VALUES ($1, $2)`
	if _, err := conn.ExecContext(ctx, insert, 6, "f"); err != nil {
		t.Fatal(err)
	}
	_, err := conn.ExecContext(ctx, insert, 7, "a")
	if !IsUniqueViolation(err, "t.v") {
		t.Fatalf("duplicate v: %v", err)
	}
	if _, err := conn.ExecContext(ctx, insert, 7, "g"); err != nil {
		t.Fatalf("after the failure: %v", err)
	}
	if cacheOf(t, conn)[insert] == nil {
		t.Fatal("the insert's statement is not kept")
	}

	// A query that counts for far longer than the deadline.
	const slow = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1) SELECT count(*) FROM n`
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	var n int
	err = conn.QueryRowContext(short, slow, 1_000_000_000).Scan(&n)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("interrupted query: n=%d, %v", n, err)
	}
	if err := conn.QueryRowContext(ctx, slow, 1000).Scan(&n); err != nil || n != 1000 {
		t.Fatalf("the query again: n=%d, %v", n, err)
	}
	if v := value(t, conn, `SELECT v FROM t WHERE k = $1`, 7); v != "g" {
		t.Fatalf("k=7: %q", v)
	}
}
