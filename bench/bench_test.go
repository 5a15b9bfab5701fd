package main

// These test the harness's pure pieces and how it opens its SQLite baseline;
// the harness itself never runs in tests (it is a measurement, and `go test
// ./...` must stay fast).

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPercentileIsNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- { // unsorted on purpose
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {95, 95 * time.Millisecond}, {99, 99 * time.Millisecond},
		{100, 100 * time.Millisecond}, {0, 1 * time.Millisecond}, {99.5, 100 * time.Millisecond}} {
		if got := percentile(ds, c.p); got != c.want {
			t.Errorf("percentile(1..100 ms, %v) = %v, want %v", c.p, got, c.want)
		}
	}
	three := []time.Duration{3, 1, 2}
	if got := percentile(three, 50); got != 2 {
		t.Errorf("p50 of {1,2,3} = %v, want 2", got)
	}
	if got := percentile(three, 99); got != 3 {
		t.Errorf("p99 of {1,2,3} = %v, want 3", got)
	}
	if got := percentile(nil, 99); got != 0 {
		t.Errorf("p99 of nothing = %v, want 0", got)
	}
}

// pgbench 15's output, abridged.
const pgbench15 = `pgbench (15.20 (Debian 15.20-0+deb12u1))
transaction type: /tmp/pgbench-1.sql
scaling factor: 1
query mode: prepared
number of clients: 32
number of threads: 2
maximum number of tries: 1
duration: 5 s
number of transactions actually processed: 67512
number of failed transactions: 0 (0.000%)
latency average = 2.368 ms
initial connection time = 25.163 ms
tps = 13512.345678 (without initial connection time)
`

func TestParsePgbenchTPS(t *testing.T) {
	if got, err := parsePgbenchTPS(pgbench15); err != nil || got != 13512.345678 {
		t.Errorf("PostgreSQL 15 output: %v, %v; want 13512.345678", got, err)
	}
	old := "latency average = 2.1 ms\ntps = 9001.5 (including connections establishing)\ntps = 9100.25 (excluding connections establishing)\n"
	if got, err := parsePgbenchTPS(old); err != nil || got != 9100.25 {
		t.Errorf("PostgreSQL 13 output: %v, %v; want the rate excluding connections, 9100.25", got, err)
	}
	failed := strings.Replace(pgbench15, "number of failed transactions: 0 (0.000%)", "number of failed transactions: 12 (0.018%)", 1)
	if _, err := parsePgbenchTPS(failed); err == nil {
		t.Error("output with failed transactions gave a rate, want an error")
	}
	if _, err := parsePgbenchTPS("pgbench: error: connection to server failed\n"); err == nil {
		t.Error("output without a rate gave one, want an error")
	}
}

func TestParseStatus(t *testing.T) {
	status := "Name:\tmomopay\nVmPeak:\t 1717892 kB\nVmHWM:\t   61440 kB\nVmRSS:\t   40960 kB\nThreads:\t12\n"
	m, err := parseStatus(status)
	if err != nil || m.HWM != 60<<20 || m.RSS != 40<<20 {
		t.Errorf("parseStatus = %+v, %v; want HWM 60 MiB, RSS 40 MiB", m, err)
	}
	if _, err := parseStatus("Name:\tmomopay\n"); err == nil {
		t.Error("a status without VmRSS parsed, want an error")
	}
}

func TestUUIDOfIsPostgresMD5UUID(t *testing.T) {
	// SELECT md5('1')::uuid on PostgreSQL.
	if got, want := uuidOf("1"), "c4ca4238-a0b9-2382-0dcc-509a6f75849b"; got != want {
		t.Errorf("uuidOf(1) = %s, want %s", got, want)
	}
}

// The SQLite baseline must run with the server's settings, or its ratio
// compares momopay with a differently tuned database.
func TestSQLiteBaselineOpensLikeTheServer(t *testing.T) {
	for synchronous, want := range map[string]int{"NORMAL": 1, "FULL": 2} {
		db, err := openSQLite(t.Context(), filepath.Join(t.TempDir(), "raw.db"), synchronous)
		if err != nil {
			t.Fatal(err)
		}
		var journal string
		var sync, fk int
		err = db.QueryRowContext(t.Context(), `SELECT (SELECT journal_mode FROM pragma_journal_mode), (SELECT synchronous FROM pragma_synchronous), (SELECT foreign_keys FROM pragma_foreign_keys)`).Scan(&journal, &sync, &fk)
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		if journal != "wal" || sync != want || fk != 1 {
			t.Errorf("synchronous=%s: journal_mode %s, synchronous %d, foreign_keys %d; want wal, %d, 1", synchronous, journal, sync, fk, want)
		}
	}
}
