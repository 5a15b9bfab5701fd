package main

// These test the harness's pure pieces and how it opens its SQLite baseline;
// the harness itself never runs in tests (it is a measurement, and `go test
// ./...` must stay fast).

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
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

// The closed loops' wire must send what net/http would (method, path,
// Host, the key, a JSON body with its length), keep one connection while
// the server keeps it, open another when the server closes it, and report
// a non-2xx answer with its status.
func TestWireSpeaksHTTP(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.Header.Get("Authorization") != "Bearer k1":
			http.Error(w, `{"error":{"code":"UNAUTHORIZED"}}`, http.StatusUnauthorized)
		case r.URL.Path == "/close":
			w.Header().Set("Connection", "close")
			fmt.Fprint(w, `{"id":"closing"}`)
		default:
			fmt.Fprintf(w, `{"id":%q,"status":%q}`, r.Method+" "+r.URL.RequestURI()+" "+r.Host, r.Header.Get("Content-Type")+" "+string(body))
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	ws, err := newWires(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.close()
	c, host := ws.of(3), strings.TrimPrefix(srv.URL, "http://")
	if ws.of(3) != c || ws.of(0) == c {
		t.Fatal("a worker does not keep its own wire")
	}

	var got tx
	if code, err := c.do(t.Context(), "POST", "/v1/transactions?x=1", "k1", []byte(`{"a":1}`), &got); err != nil || code != 200 {
		t.Fatalf("POST: %d %v", code, err)
	}
	if got.ID != "POST /v1/transactions?x=1 "+host || got.Status != `application/json {"a":1}` {
		t.Errorf("the server saw %q, %q", got.ID, got.Status)
	}
	for range 5 {
		if _, err := c.do(t.Context(), "GET", "/v1/transactions/1", "k1", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for six requests, want one kept alive", n)
	}
	if code, err := c.do(t.Context(), "GET", "/", "k2", nil, nil); code != 401 || err == nil || !strings.Contains(err.Error(), "HTTP 401") {
		t.Errorf("401 answer: %d %v", code, err)
	}
	if _, err := c.do(t.Context(), "GET", "/close", "k1", nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.do(t.Context(), "GET", "/after", "k1", nil, nil); err != nil {
		t.Fatalf("after the server closed the connection: %v", err)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want a second one after the server closed the first", n)
	}
	if _, err := newWires("https://example.td"); err == nil {
		t.Error("newWires took an https address")
	}
}

// A closed loop's end cuts its last requests short: that is not an error
// of the server's. (A wire's deadline passes a moment before the loop's
// context says so; counting those made thousands of errors a run.)
func TestClosedLoopEndIsNoError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{}`)
	}))
	defer srv.Close()
	a, err := newAPI(srv.URL, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	for range 3 {
		s := closedLoop(t.Context(), a, 4, 200*time.Millisecond, 0, func(ctx context.Context, c *wire, w, i int) error {
			_, err := c.do(ctx, "GET", "/", "k1", nil, nil)
			return err
		})
		if s.ok == 0 || s.errs != 0 {
			t.Fatalf("%d requests answered, %d errors (first: %s)", s.ok, s.errs, s.firstErr)
		}
	}
}

// A closed-loop p99 that misses its target says what Little's law made of
// it: with 32 workers at 780 answers a second the mean is 41 ms, so no
// p99 under 25 ms is possible below 1,280 a second. A met target, or the
// drain (not a closed loop), carries no such note.
func TestClosedLoopCheckNamesTheRateItNeeds(t *testing.T) {
	r := &report{Conns: 32, PG: &pgBaseline{InsertTPS: 20000, ReadTPS: 50000}}
	r.Results = []*result{
		{DB: "postgres", Scenario: "create", Rate: 780, P99: 131},
		{DB: "postgres", Scenario: "get", Rate: 25000, P99: 6.2},
	}
	r.evaluate()
	got := map[string]check{}
	for _, c := range r.Checks {
		got[c.Target] = c
	}
	create := got["create p99 < 25 ms"]
	if create.Pass || create.Got != "131ms (32 connections at 780/s: mean 41ms; a p99 under 25ms needs over 1280/s)" {
		t.Errorf("create p99 check = %+v", create)
	}
	if get := got["get p99 < 10 ms"]; !get.Pass || get.Got != "6.2ms" {
		t.Errorf("get p99 check = %+v, want a pass with the p99 alone", get)
	}
}
