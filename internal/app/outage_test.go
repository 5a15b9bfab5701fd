package app_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/operator/sandbox"
	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testserver"
)

// dbProxy forwards TCP connections to a database and can play its outage:
// cut closes every connection and stops listening, so new ones are refused
// exactly as by a PostgreSQL that is down; restore listens again on the
// same address. The machine's PostgreSQL itself is never touched.
type dbProxy struct {
	addr, target string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
}

func startDBProxy(t *testing.T, target string) *dbProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dbProxy{addr: ln.Addr().String(), target: target, conns: map[net.Conn]bool{}}
	p.serve(ln)
	t.Cleanup(p.cut)
	return p
}

func (p *dbProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // cut
			}
			go p.forward(ln, c)
		}
	}()
}

func (p *dbProxy) forward(ln net.Listener, c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.ln != ln { // cut while dialling
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			c.Close()
			up.Close()
			p.mu.Lock()
			delete(p.conns, c)
			delete(p.conns, up)
			p.mu.Unlock()
		})
	}
	go func() { io.Copy(up, c); closeBoth() }()
	io.Copy(c, up)
	closeBoth()
}

// cut takes the database away: open connections die mid-stream and new
// ones are refused.
func (p *dbProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// restore brings the database back on the same address.
func (p *dbProxy) restore(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", p.addr, err)
	}
	p.serve(ln)
}

// through rewrites a PostgreSQL URL to go through the proxy.
func (p *dbProxy) through(t *testing.T, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.addr
	return u.String()
}

// apiAnswer is one /v1 answer, decoded as far as these tests need.
type apiAnswer struct {
	status     int
	retryAfter string // the Retry-After header
	tx         struct {
		ID        string `json:"id"`
		Reference string `json:"reference"`
		Status    string `json:"status"`
		ExpiresAt string `json:"expires_at"`
	}
	err struct {
		Code       string `json:"code"`
		Status     int    `json:"status"`
		Message    string `json:"message"`
		RetryAfter *int   `json:"retry_after"`
	}
	took time.Duration
}

// apiClient waits long: how long an answer took is asserted where it
// matters, and a loaded CI machine must not turn slowness into a failure
// to answer.
var apiClient = &http.Client{Timeout: 2 * time.Minute}

func callAPI(srv *testserver.Server, method, path string, body any) (*apiAnswer, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, srv.URL+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+srv.APIKey)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := apiClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	a := &apiAnswer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), took: time.Since(start)}
	if resp.StatusCode < 300 {
		err = json.Unmarshal(raw, &a.tx)
	} else {
		var env struct {
			Error json.RawMessage `json:"error"`
		}
		if err = json.Unmarshal(raw, &env); err == nil {
			err = json.Unmarshal(env.Error, &a.err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %d %s: %v", method, path, resp.StatusCode, raw, err)
	}
	return a, nil
}

func createOutagePayment(srv *testserver.Server, ref, phone string) (*apiAnswer, error) {
	return callAPI(srv, http.MethodPost, "/v1/transactions", map[string]any{
		"reference": ref, "amount": 1500, "currency": "XAF", "operator": "AIRTEL", "phone_number": phone,
	})
}

// checkUnavailable fails t unless a is the contract's 503: the error
// envelope with GATEWAY_UNAVAILABLE and retry_after, mirrored in the
// Retry-After header.
func checkUnavailable(t *testing.T, what string, a *apiAnswer) {
	t.Helper()
	if a.status != http.StatusServiceUnavailable || a.err.Code != "GATEWAY_UNAVAILABLE" || a.err.Status != 503 ||
		a.err.RetryAfter == nil || *a.err.RetryAfter < 1 || a.retryAfter != fmt.Sprint(*a.err.RetryAfter) || a.err.Message == "" {
		t.Errorf("%s: got %d %+v (Retry-After %q), want 503 GATEWAY_UNAVAILABLE with retry_after", what, a.status, a.err, a.retryAfter)
	}
}

var finalStatuses = map[string]bool{"SUCCESS": true, "FAILED": true, "EXPIRED": true, "TIMEOUT": true}

// TestDatabaseOutage takes PostgreSQL away from a serving momopay while
// clients keep creating and reading payments, then brings it back: every
// request is answered 2xx or the contract's 503 with retry_after (never a
// 500, never a hang), every payment acknowledged with 201 is there
// afterwards and reaches a final state, and the service recovers by itself:
// the connection pool, River's workers (a payment that only polling can
// settle is settled before it expires) and the sweeper.
func TestDatabaseOutage(t *testing.T) {
	t.Parallel()
	dbURL := testdb.URL(t, "postgres")
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := startDBProxy(t, u.Host)
	const ttl = 12 * time.Second
	srv := testserver.Start(t, testserver.Options{DatabaseURL: proxy.through(t, dbURL), PendingTTL: ttl})

	phones := []string{sandbox.PhoneSuccess, sandbox.PhoneFailure, sandbox.PhoneNoAnswer, sandbox.PhoneLostCallback, sandbox.PhoneExpired}
	var (
		mu        sync.Mutex
		acked     = map[string]string{} // id -> reference
		attempted = map[string]bool{}   // every reference sent
		refused   = map[string]bool{}   // references answered 503
		n503      atomic.Int64
		nOK       atomic.Int64
		slowest   atomic.Int64
		seq       atomic.Int64
	)
	drive := func(ctx context.Context, worker int) {
		for ctx.Err() == nil {
			ref := fmt.Sprintf("outage-%d-%d", worker, seq.Add(1))
			phone := phones[int(seq.Load())%len(phones)]
			mu.Lock()
			attempted[ref] = true
			mu.Unlock()
			a, err := createOutagePayment(srv, ref, phone)
			if err != nil {
				t.Errorf("create %s: %v", ref, err)
				return
			}
			slowest.Store(max(slowest.Load(), int64(a.took)))
			switch a.status {
			case http.StatusCreated:
				nOK.Add(1)
				mu.Lock()
				acked[a.tx.ID] = ref
				mu.Unlock()
				if g, err := callAPI(srv, http.MethodGet, "/v1/transactions/"+a.tx.ID, nil); err != nil {
					t.Errorf("get %s: %v", a.tx.ID, err)
				} else if g.status == http.StatusServiceUnavailable {
					n503.Add(1)
					checkUnavailable(t, "get "+a.tx.ID, g)
				} else if g.status != http.StatusOK || g.tx.Reference != ref {
					t.Errorf("get %s: %d %+v", a.tx.ID, g.status, g.tx)
				}
			case http.StatusServiceUnavailable:
				n503.Add(1)
				checkUnavailable(t, "create "+ref, a)
				mu.Lock()
				refused[ref] = true
				mu.Unlock()
			default:
				t.Errorf("create %s: %d %+v, want 201 or 503", ref, a.status, a.err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() { drive(ctx, w) })
	}
	for deadline := time.Now().Add(time.Minute); nOK.Load() < 8; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d payments acknowledged in a minute before the outage", nOK.Load())
		}
	}
	before := nOK.Load()
	proxy.cut()
	cutAt := time.Now()
	time.Sleep(4 * time.Second)
	during503 := n503.Load()
	proxy.restore(t)
	restoredAt := time.Now()
	// The service recovers by itself: a create succeeds again.
	var recovered time.Duration
	for i := 0; ; i++ {
		a, err := createOutagePayment(srv, fmt.Sprintf("after-%d", i), sandbox.PhoneSuccess)
		if err != nil {
			t.Fatal(err)
		}
		if a.status == http.StatusCreated {
			recovered = time.Since(restoredAt)
			mu.Lock()
			acked[a.tx.ID], attempted[a.tx.Reference] = a.tx.Reference, true
			mu.Unlock()
			break
		}
		checkUnavailable(t, "create after restore", a)
		if time.Since(restoredAt) > 30*time.Second {
			t.Fatalf("no create succeeded within 30 s of the database coming back")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // and keep driving a little on the restored database
	stop()
	wg.Wait()
	if t.Failed() {
		return
	}
	if before == 0 || during503 == 0 {
		t.Fatalf("the test proved nothing: %d payments acknowledged before the cut, %d answers 503 during it", before, during503)
	}
	t.Logf("%d payments acknowledged, %d answers 503 during the %s outage; slowest answer %s; first create succeeded %s after the restore",
		len(acked), n503.Load(), restoredAt.Sub(cutAt).Round(time.Millisecond), time.Duration(slowest.Load()).Round(time.Millisecond), recovered.Round(time.Millisecond))
	if time.Duration(slowest.Load()) > 10*time.Second {
		t.Errorf("a request took %s: requests must be answered, not held, while the database is away", time.Duration(slowest.Load()))
	}

	// The pool, River and the sweeper work again: a payment that only a
	// status poll can settle is settled before it expires.
	a, err := createOutagePayment(srv, "poll-only-after-restore", sandbox.PhoneLostCallback)
	if err != nil || a.status != http.StatusCreated {
		t.Fatalf("create after restore: %+v %v", a, err)
	}
	acked[a.tx.ID], attempted[a.tx.Reference] = a.tx.Reference, true
	expires, _ := time.Parse(time.RFC3339Nano, a.tx.ExpiresAt)
	for {
		g, err := callAPI(srv, http.MethodGet, "/v1/transactions/"+a.tx.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		if g.tx.Status == "SUCCESS" {
			break
		}
		if g.status != http.StatusOK || g.tx.Status != "PENDING" || time.Now().After(expires) {
			t.Fatalf("a payment created after the restore is %d %s at %s, expiring at %s: River's status polls did not resume",
				g.status, g.tx.Status, time.Now().Format(time.TimeOnly), expires.Format(time.TimeOnly))
		}
		time.Sleep(200 * time.Millisecond)
	}
	select {
	case <-srv.App.Jobs.Stopped():
		t.Fatal("the River client stopped during the outage")
	default:
	}

	// Nothing acknowledged was lost, and everything in the database, even
	// a create whose answer the outage swallowed, reaches a final state.
	direct, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	deadline := time.Now().Add(ttl + 60*time.Second)
	for {
		rows, err := direct.Query(`SELECT id, reference, status FROM transactions WHERE merchant_id = $1`, srv.MerchantID)
		if err != nil {
			t.Fatal(err)
		}
		stored, pending := map[string]string{}, 0
		for rows.Next() {
			var id, ref, status string
			if err := rows.Scan(&id, &ref, &status); err != nil {
				t.Fatal(err)
			}
			stored[id] = ref
			if !finalStatuses[status] {
				pending++
			}
			if !attempted[ref] {
				t.Errorf("transaction %s has reference %q, which no request sent", id, ref)
			}
		}
		rows.Close()
		for id, ref := range acked {
			if stored[id] != ref {
				t.Fatalf("payment %s (%s) was acknowledged with 201 and is not in the database", id, ref)
			}
		}
		if pending == 0 {
			unacked := 0
			for _, ref := range stored {
				if refused[ref] {
					unacked++
				}
			}
			t.Logf("all %d stored payments final (%d of them answered 503: the commit went through but its answer was cut)", len(stored), unacked)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d payments still PENDING %s after the last one was created", pending, ttl+60*time.Second)
		}
		time.Sleep(500 * time.Millisecond)
	}
	for id := range acked {
		g, err := callAPI(srv, http.MethodGet, "/v1/transactions/"+id, nil)
		if err != nil || g.status != http.StatusOK || !finalStatuses[g.tx.Status] {
			t.Errorf("GET %s after the outage: %+v %v", id, g, err)
		}
	}
}

// TestSQLiteBusy: another process (here, another connection) holds
// SQLite's write lock for longer than the busy timeout. Requests that need
// to write are answered with the contract's 503 and retry_after, not 500,
// and succeed once the lock is let go. (The answer comes after at least the
// 5 s busy timeout, longer when the job workers are queued for the one
// connection ahead of the request, each waiting out its own.)
func TestSQLiteBusy(t *testing.T) {
	t.Parallel()
	dbURL := testdb.URL(t, "sqlite")
	srv := testserver.Start(t, testserver.Options{DatabaseURL: dbURL})
	lock := holdWriteLock(t, dbURL)
	a, err := createOutagePayment(srv, "busy-1", sandbox.PhoneSuccess)
	if err != nil {
		t.Fatal(err)
	}
	checkUnavailable(t, "create while another process holds the write lock", a)
	if _, err := lock.ExecContext(t.Context(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if a, err = createOutagePayment(srv, "busy-1", sandbox.PhoneSuccess); err != nil || a.status != http.StatusCreated {
		t.Fatalf("create with the same reference once the lock is gone: %+v %v", a, err)
	}
}

// TestSQLiteShortLockWaitedOut: another process holds SQLite's write lock
// for 12 s, longer than two 5 s busy timeouts but well within the 25 s a
// request may wait: a create waits it out and gets its 201. Before, the
// API key's last_used_at write (bookkeeping) was refused after one busy
// timeout and the create answered 503 for it.
func TestSQLiteShortLockWaitedOut(t *testing.T) {
	t.Parallel()
	dbURL := testdb.URL(t, "sqlite")
	srv := testserver.Start(t, testserver.Options{DatabaseURL: dbURL})
	lock := holdWriteLock(t, dbURL)
	released := make(chan error, 1)
	go func() {
		time.Sleep(12 * time.Second)
		_, err := lock.ExecContext(context.Background(), "ROLLBACK")
		released <- err
	}()
	a, err := createOutagePayment(srv, "short-lock", sandbox.PhoneSuccess)
	if err != nil || a.status != http.StatusCreated {
		t.Errorf("create while a lock is held for 12 s: %+v %v, want 201", a, err)
	}
	if err := <-released; err != nil {
		t.Fatal(err)
	}
}

// holdWriteLock takes SQLite's write lock on dbURL as another process
// would (testdb.HoldSQLiteWriteLock).
func holdWriteLock(t *testing.T, dbURL string) *sql.Conn {
	return testdb.HoldSQLiteWriteLock(t, dbURL)
}

// TestSQLiteDiskFull: when SQLite cannot grow its file (a full disk; here
// its page limit, which fails writes with the same SQLITE_FULL), a create
// is answered with the contract's 503 and retry_after, not 500, and once
// there is room the same reference is created: nothing was half-written.
func TestSQLiteDiskFull(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, testserver.Options{DB: "sqlite"})
	// The writer is one connection: the limit applies to every write.
	var pages int
	if err := srv.App.DB.QueryRowContext(t.Context(), "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.App.DB.ExecContext(t.Context(), fmt.Sprintf("PRAGMA max_page_count = %d", pages)); err != nil {
		t.Fatal(err)
	}
	var created int
	for i := range 50 {
		a, err := createOutagePayment(srv, fmt.Sprintf("full-%d", i), sandbox.PhoneSuccess)
		if err != nil {
			t.Fatal(err)
		}
		if a.status == http.StatusCreated {
			created++ // room left in the file's last pages
			continue
		}
		checkUnavailable(t, "create on a full disk", a)
		if _, err := srv.App.DB.ExecContext(t.Context(), "PRAGMA max_page_count = 1073741823"); err != nil {
			t.Fatal(err)
		}
		if a, err := createOutagePayment(srv, fmt.Sprintf("full-%d", i), sandbox.PhoneSuccess); err != nil || a.status != http.StatusCreated {
			t.Fatalf("the same reference once there is room: %+v %v", a, err)
		}
		return
	}
	t.Fatalf("%d creates, none refused: the page limit did not bite", created)
}

// TestSQLiteReadsWhileLocked: while another process holds SQLite's write
// lock, reads keep answering: the API key's last_used_at write (due, a
// minute after the last) gives up after 2 s and is not tried again by
// the key for a minute. Before, each read waited out the busy timeout
// for that write (and up to the 25 s budget queued behind the job
// workers), and a burst of reads held that long met the rate limit.
func TestSQLiteReadsWhileLocked(t *testing.T) {
	t.Parallel()
	clock := testserver.NewClock(time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC))
	srv := testserver.Start(t, testserver.Options{DB: "sqlite", Now: clock.Now})
	if a, err := callAPI(srv, http.MethodGet, "/v1/transactions", nil); err != nil || a.status != http.StatusOK {
		t.Fatalf("list: %+v %v", a, err)
	}
	lock := holdWriteLock(t, srv.DatabaseURL)
	defer lock.ExecContext(t.Context(), "ROLLBACK")
	clock.Advance(2 * time.Minute) // last_used_at due again
	start := time.Now()
	for range 10 {
		if a, err := callAPI(srv, http.MethodGet, "/v1/transactions", nil); err != nil || a.status != http.StatusOK {
			t.Fatalf("a list while the write lock is held: %+v %v", a, err)
		}
	}
	// One of them waits the 2 s; ten waiting it would take 20 s.
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("10 lists while the write lock is held took %v: each waited for last_used_at", took)
	}
}
