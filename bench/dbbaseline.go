package main

import (
	"context"
	"crypto/md5"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

	"github.com/momopay/momopay/internal/store"
)

// pgServer is the PostgreSQL server the harness makes its throw-away
// databases on.
type pgServer struct {
	url   string // of its maintenance database
	admin *sql.DB
}

func openPG(ctx context.Context, serverURL string) (*pgServer, error) {
	u, err := url.Parse(serverURL)
	if err != nil || (u.Hostname() != "127.0.0.1" && u.Hostname() != "localhost") {
		return nil, fmt.Errorf("-pg must be a postgres:// URL on 127.0.0.1, not %q", serverURL)
	}
	admin, err := sql.Open("pgx", serverURL)
	if err != nil {
		return nil, err
	}
	if err := admin.PingContext(ctx); err != nil {
		admin.Close()
		return nil, fmt.Errorf("PostgreSQL at %s: %w", serverURL, err)
	}
	return &pgServer{url: serverURL, admin: admin}, nil
}

// createDB makes a fresh database and returns its URL.
func (p *pgServer) createDB(ctx context.Context, name string) (string, error) {
	if _, err := p.admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	u, _ := url.Parse(p.url)
	u.Path = "/" + name
	return u.String(), nil
}

// dropDB removes a database made by createDB, even with sessions left in
// it; on a context that has ended, it still gets a few seconds.
func (p *pgServer) dropDB(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := p.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	return err
}

// benchTable is shaped like a narrow transactions row, with the primary
// key and the per-merchant unique reference every create maintains.
const benchTable = `CREATE TABLE bench_tx (
	id           UUID PRIMARY KEY,
	merchant_id  UUID NOT NULL,
	reference    TEXT NOT NULL,
	amount       BIGINT NOT NULL,
	operator     TEXT NOT NULL,
	phone_number TEXT NOT NULL,
	status       TEXT NOT NULL,
	created_at   TIMESTAMPTZ NOT NULL,
	updated_at   TIMESTAMPTZ NOT NULL,
	expires_at   TIMESTAMPTZ NOT NULL,
	UNIQUE (merchant_id, reference)
)`

// readRows is how many rows the primary-key read tables are filled with.
const readRows = 100_000

// pgbench scripts: one durable one-row insert per transaction (autocommit,
// with the server's synchronous_commit), and one primary-key read of a
// random row of the pre-filled table, whose ids are md5(n)::uuid.
const (
	pgbenchInsert = `INSERT INTO bench_tx (id, merchant_id, reference, amount, operator, phone_number, status, created_at, updated_at, expires_at)
VALUES (gen_random_uuid(), '00000000-0000-0000-0000-000000000001', gen_random_uuid()::text, 1500, 'AIRTEL', '+23560000001', 'PENDING', now(), now(), now() + interval '5 minutes');
`
	pgbenchRead = `\set n random(1, 100000)
SELECT id, merchant_id, reference, amount, operator, phone_number, status, created_at, updated_at, expires_at FROM bench_read WHERE id = md5(:n::text)::uuid;
`
)

// pgBaseline is what PostgreSQL alone did, by pgbench.
type pgBaseline struct {
	InsertTPS         float64 `json:"durable_one_row_inserts_per_second"`
	ReadTPS           float64 `json:"primary_key_reads_per_second"`
	SynchronousCommit string  `json:"synchronous_commit"`
}

// measurePG runs pgbench's insert and read scripts on a throw-away
// database with conns clients for d each.
func measurePG(ctx context.Context, pg *pgServer, pgbench string, conns int, d time.Duration, dir string) (pgBaseline, error) {
	name := "momopay_bench_pgbench_" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	dbURL, err := pg.createDB(ctx, name)
	if err != nil {
		return pgBaseline{}, err
	}
	defer pg.dropDB(name)
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		return pgBaseline{}, err
	}
	defer db.Close()
	var b pgBaseline
	if err := db.QueryRowContext(ctx, "SHOW synchronous_commit").Scan(&b.SynchronousCommit); err != nil {
		return b, err
	}
	for _, q := range []string{benchTable,
		strings.Replace(benchTable, "bench_tx", "bench_read", 1),
		fmt.Sprintf(`INSERT INTO bench_read SELECT md5(n::text)::uuid, '00000000-0000-0000-0000-000000000001',
			'ref-' || n, 1500, 'AIRTEL', '+23560000001', 'SUCCESS', now(), now(), now() FROM generate_series(1, %d) n`, readRows),
		"VACUUM ANALYZE bench_read"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return b, fmt.Errorf("pgbench tables: %w", err)
		}
	}
	if b.InsertTPS, err = runPgbench(ctx, pgbench, dbURL, pgbenchInsert, conns, d, dir); err != nil {
		return b, err
	}
	if b.ReadTPS, err = runPgbench(ctx, pgbench, dbURL, pgbenchRead, conns, d, dir); err != nil {
		return b, err
	}
	return b, nil
}

func runPgbench(ctx context.Context, pgbench, dbURL, script string, conns int, d time.Duration, dir string) (float64, error) {
	f, err := os.CreateTemp(dir, "pgbench-*.sql")
	if err != nil {
		return 0, err
	}
	f.WriteString(script)
	f.Close()
	secs := max(int(d.Round(time.Second)/time.Second), 1)
	out, err := exec.CommandContext(ctx, pgbench, "-n", "-f", f.Name(), "-c", strconv.Itoa(conns), "-j", "2",
		"-T", strconv.Itoa(secs), "-M", "prepared", dbURL).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("pgbench: %w: %s", err, out)
	}
	return parsePgbenchTPS(string(out))
}

// pgbenchTPS matches pgbench's result line: "tps = 13512.3 (without
// initial connection time)" since PostgreSQL 14, "(excluding connections
// establishing)" before.
var pgbenchTPS = regexp.MustCompile(`(?m)^tps = ([0-9]+(?:\.[0-9]+)?) \((without initial connection time|excluding connections establishing)\)`)

// parsePgbenchTPS returns the transactions per second pgbench reported,
// and an error when it reported failures or no rate.
func parsePgbenchTPS(out string) (float64, error) {
	if m := regexp.MustCompile(`(?m)^number of failed transactions: ([1-9][0-9]*)`).FindStringSubmatch(out); m != nil {
		return 0, fmt.Errorf("pgbench: %s transactions failed", m[1])
	}
	m := pgbenchTPS.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no tps in pgbench's output: %q", out)
	}
	return strconv.ParseFloat(m[1], 64)
}

// sqliteBaseline is what SQLite alone did through momopay's driver.
type sqliteBaseline struct {
	InsertPerSec     float64 `json:"inserts_per_second"`      // synchronous=NORMAL, as serve in sandbox mode
	InsertFullPerSec float64 `json:"inserts_per_second_full"` // synchronous=FULL, as serve in live mode
	ReadPerSec       float64 `json:"primary_key_reads_per_second"`
}

// measureSQLite runs, on fresh files in dir, one goroutine on one
// connection (the store's pool has one): an insert loop of one row per
// transaction, and a primary-key read loop over a pre-filled table.
func measureSQLite(ctx context.Context, dir string, d time.Duration) (sqliteBaseline, error) {
	var b sqliteBaseline
	var err error
	if b.InsertPerSec, err = sqliteInserts(ctx, filepath.Join(dir, "raw-normal.db"), "NORMAL", d); err != nil {
		return b, err
	}
	if b.InsertFullPerSec, err = sqliteInserts(ctx, filepath.Join(dir, "raw-full.db"), "FULL", d); err != nil {
		return b, err
	}
	b.ReadPerSec, err = sqliteReads(ctx, filepath.Join(dir, "raw-read.db"), d)
	return b, err
}

// openSQLite opens path the way momopay's server does, through
// store.Open (WAL, a busy timeout, foreign keys, BEGIN IMMEDIATE, one
// writer connection), with synchronous=NORMAL as serve uses in sandbox
// mode (the mode the harness runs) or FULL as live mode does, and makes
// the benchmark's table. The loops use the writer connection.
func openSQLite(ctx context.Context, path, synchronous string) (*store.DB, error) {
	url := path
	if synchronous == "FULL" {
		url = store.Durable(path)
	}
	db, err := store.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	// SQLite has no UUID or TIMESTAMPTZ: the store keeps both as text.
	schema := strings.NewReplacer("UUID", "TEXT", "TIMESTAMPTZ", "TEXT", "BIGINT", "INTEGER").Replace(benchTable)
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

const sqliteInsert = `INSERT INTO bench_tx (id, merchant_id, reference, amount, operator, phone_number, status, created_at, updated_at, expires_at)
VALUES (?, '00000000-0000-0000-0000-000000000001', ?, 1500, 'AIRTEL', '+23560000001', 'PENDING', ?, ?, ?)`

func sqliteInserts(ctx context.Context, path, synchronous string, d time.Duration) (float64, error) {
	db, err := openSQLite(ctx, path, synchronous)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	start := time.Now()
	n := 0
	for ; time.Since(start) < d && ctx.Err() == nil; n++ {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return 0, err
		}
		now := time.Now().UTC().Format("2006-01-02T15:04:05.000000Z")
		id := uuidOf(fmt.Sprintf("insert-%d", n))
		if _, err := tx.ExecContext(ctx, sqliteInsert, id, id, now, now, now); err != nil {
			tx.Rollback()
			return 0, err
		}
		if err := tx.Commit(); err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(start).Seconds(), ctx.Err()
}

func sqliteReads(ctx context.Context, path string, d time.Duration) (float64, error) {
	db, err := openSQLite(ctx, path, "NORMAL")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	for n := 1; n <= readRows; n++ {
		id := uuidOf(strconv.Itoa(n))
		if _, err := tx.ExecContext(ctx, sqliteInsert, id, id, "x", "x", "x"); err != nil {
			tx.Rollback()
			return 0, err
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	stmt, err := db.PrepareContext(ctx, `SELECT id, merchant_id, reference, amount, operator, phone_number, status, created_at, updated_at, expires_at FROM bench_tx WHERE id = ?`)
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	start := time.Now()
	n := 0
	for ; time.Since(start) < d && ctx.Err() == nil; n++ {
		var c [10]any
		var s [10]string
		for i := range c {
			c[i] = &s[i]
		}
		if err := stmt.QueryRowContext(ctx, uuidOf(strconv.Itoa(1+rand.IntN(readRows)))).Scan(c[:]...); err != nil {
			return 0, fmt.Errorf("read: %w", err)
		}
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	if n == 0 {
		return 0, errors.New("no read done")
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// uuidOf is PostgreSQL's md5(s)::uuid: a UUID-shaped text id derived from s.
func uuidOf(s string) string {
	h := fmt.Sprintf("%x", md5.Sum([]byte(s)))
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
