package app_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/app"
	"github.com/momopay/momopay/internal/operator"
	"github.com/momopay/momopay/internal/operator/airtel/airtelsim"
	"github.com/momopay/momopay/internal/operator/sandbox"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testlog"
	"github.com/momopay/momopay/internal/testserver"
)

// get fetches url and returns its status and body.
func get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// scrape reads /metrics from an admin listener as Prometheus does.
func scrape(t testing.TB, adminURL string) string {
	t.Helper()
	code, body := get(t, adminURL+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	return body
}

// sample returns the value of one series of a scrape, written as the text
// format prints it: name{labels in alphabetical order}.
func sample(t testing.TB, scraped, series string) float64 {
	t.Helper()
	for line := range strings.Lines(scraped) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", series, err)
			}
			return f
		}
	}
	t.Fatalf("no series %s in the scrape", series)
	return 0
}

func wantSample(t testing.TB, scraped, series string, want float64) {
	t.Helper()
	if got := sample(t, scraped, series); got != want {
		t.Errorf("%s = %v, want %v", series, got, want)
	}
}

// call makes one API request and returns its status and decoded body.
func call(t testing.TB, method, url, key string, body string, header ...string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func createPayment(t testing.TB, s *testserver.Server, key, ref, op, phone string) (int, map[string]any) {
	t.Helper()
	return call(t, http.MethodPost, s.URL+"/v1/transactions", key,
		`{"reference":"`+ref+`","amount":1500,"currency":"XAF","operator":"`+op+`","phone_number":"`+phone+`","description":"observe"}`)
}

// waitFinal polls a transaction until it is final.
func waitFinal(t testing.TB, s *testserver.Server, key, id string) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		_, tx := call(t, http.MethodGet, s.URL+"/v1/transactions/"+id, key, "")
		if st, _ := tx["status"].(string); payment.Status(st).Final() {
			return st
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("transaction %s not final after a minute", id)
	return ""
}

// receiver is a merchant's webhook endpoint answering 200 and counting.
type receiver struct {
	mu   sync.Mutex
	hits int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	rc.mu.Lock()
	rc.hits++
	rc.mu.Unlock()
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.hits
}

// eventually waits for cond: a minute at most, which only a machine
// loaded far beyond its cores needs (a serve starting, a payer's answer).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after a minute", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMetricsAfterTraffic drives a served momopay through its public API
// (payments that succeed, fail and are refused until the breaker opens,
// bad requests, webhooks delivered and left undelivered, a late operator
// callback) and reads the resulting series from the admin listener.
func TestMetricsAfterTraffic(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		ctx := t.Context()
		s := testserver.Start(t, testserver.Options{DB: engine, Admin: true})
		rc := &receiver{}
		hook := httptest.NewServer(rc)
		defer hook.Close()
		if _, err := s.App.Webhooks.CreateEndpoint(ctx, s.MerchantID, hook.URL+"/momopay"); err != nil {
			t.Fatal(err)
		}
		// A second merchant, without webhooks.
		_, key2 := s.NewMerchant(t)

		code, ok := createPayment(t, s, s.APIKey, "obs-ok", "AIRTEL", sandbox.PhoneSuccess)
		if code != http.StatusCreated {
			t.Fatalf("create: %d %v", code, ok)
		}
		code, failed := createPayment(t, s, s.APIKey, "obs-fail", "MOOV", sandbox.PhoneFailure)
		if code != http.StatusCreated {
			t.Fatalf("create: %d %v", code, failed)
		}
		code, other := createPayment(t, s, key2, "obs-m2", "MOOV", sandbox.PhoneSuccess)
		if code != http.StatusCreated {
			t.Fatalf("create: %d %v", code, other)
		}
		// Five refused pushes open this merchant's AIRTEL circuit; the
		// sixth is refused by the breaker without asking the operator.
		for i := range operator.DefaultBreakerSettings.Failures + 1 {
			if code, body := createPayment(t, s, s.APIKey, "obs-down-"+strconv.Itoa(int(i)), "AIRTEL", sandbox.PhoneUnavailable); code != http.StatusServiceUnavailable {
				t.Fatalf("refused push %d: %d %v", i, code, body)
			}
		}
		if code, _ := call(t, http.MethodPost, s.URL+"/v1/transactions", s.APIKey, `{"amount":`); code != http.StatusBadRequest {
			t.Fatalf("malformed create: %d", code)
		}
		if code, _ := call(t, http.MethodGet, s.URL+"/no/such/thing", "", ""); code != http.StatusNotFound {
			t.Fatalf("unknown path: %d", code)
		}

		if st := waitFinal(t, s, s.APIKey, ok["id"].(string)); st != "SUCCESS" {
			t.Fatalf("AIRTEL payment %s", st)
		}
		if st := waitFinal(t, s, s.APIKey, failed["id"].(string)); st != "FAILED" {
			t.Fatalf("MOOV payment %s", st)
		}
		waitFinal(t, s, key2, other["id"].(string))
		eventually(t, "both webhooks delivered", func() bool { return rc.count() == 2 })

		// A late callback contradicting the SUCCESS: a reconciliation case.
		tx, err := s.App.Transactions.Transaction(ctx, s.MerchantID, ok["id"].(string))
		if err != nil {
			t.Fatal(err)
		}
		body := airtelsim.SignedCallback(s.App.SandboxCallbackSecret, tx.InternalRef, "TF", "late", "AM-LATE")
		if code, resp := call(t, http.MethodPost, s.URL+"/callbacks/airtel", "", string(body)); code != http.StatusOK {
			t.Fatalf("late callback: %d %v", code, resp)
		}

		m := scrape(t, s.AdminURL)
		wantSample(t, m, `momopay_http_requests_total{method="POST",route="/v1/transactions",status="201"}`, 3)
		wantSample(t, m, `momopay_http_requests_total{method="POST",route="/v1/transactions",status="503"}`, 6)
		wantSample(t, m, `momopay_http_requests_total{method="POST",route="/v1/transactions",status="400"}`, 1)
		wantSample(t, m, `momopay_http_requests_total{method="GET",route="/",status="404"}`, 1)
		wantSample(t, m, `momopay_http_request_duration_seconds_count{method="POST",route="/v1/transactions"}`, 10)
		if n := sample(t, m, `momopay_http_requests_total{method="GET",route="/v1/transactions/{id}",status="200"}`); n < 3 {
			t.Errorf("GET /v1/transactions/{id} counted %v times, want at least 3", n)
		}
		if n := sample(t, m, `momopay_http_requests_total{method="POST",route="/callbacks/{operator}",status="200"}`); n < 2 {
			t.Errorf("callbacks counted %v times, want the sandbox's and ours", n)
		}
		if strings.Contains(m, ok["id"].(string)) || strings.Contains(m, s.MerchantID) {
			t.Error("an id appears in the metrics")
		}

		wantSample(t, m, `momopay_payments_created_total{operator="AIRTEL"}`, 1)
		wantSample(t, m, `momopay_payments_created_total{operator="MOOV"}`, 2)
		wantSample(t, m, `momopay_payments_settled_total{operator="AIRTEL",status="SUCCESS"}`, 1)
		wantSample(t, m, `momopay_payments_settled_total{operator="MOOV",status="FAILED"}`, 1)
		wantSample(t, m, `momopay_payments_settled_total{operator="MOOV",status="SUCCESS"}`, 1)
		wantSample(t, m, `momopay_payment_settle_duration_seconds_count{operator="AIRTEL",status="SUCCESS"}`, 1)
		// The sandbox payer answers after AnswerDelay: the time to the
		// final state is that, give or take scheduling.
		if d := sample(t, m, `momopay_payment_settle_duration_seconds_sum{operator="AIRTEL",status="SUCCESS"}`); d < sandbox.AnswerDelay.Seconds() || d > 60 {
			t.Errorf("creation to SUCCESS took %v s", d)
		}
		wantSample(t, m, `momopay_payment_settle_duration_seconds_bucket{operator="AIRTEL",status="SUCCESS",le="1"}`, 0)
		wantSample(t, m, `momopay_reconciliation_cases_opened_total{source="callback"}`, 1)
		wantSample(t, m, `momopay_payments_pending`, 0)
		wantSample(t, m, `momopay_payments_pending_overdue`, 0)

		wantSample(t, m, `momopay_operator_requests_total{operation="request_payment",operator="AIRTEL",outcome="ok"}`, 1)
		wantSample(t, m, `momopay_operator_requests_total{operation="request_payment",operator="AIRTEL",outcome="unavailable"}`, 5)
		wantSample(t, m, `momopay_operator_requests_total{operation="request_payment",operator="AIRTEL",outcome="circuit_open"}`, 1)
		wantSample(t, m, `momopay_operator_requests_total{operation="request_payment",operator="MOOV",outcome="ok"}`, 2)
		wantSample(t, m, `momopay_operator_request_duration_seconds_count{operation="request_payment",operator="AIRTEL"}`, 6)
		wantSample(t, m, `momopay_operator_breaker_state{operator="AIRTEL"}`, 2)
		wantSample(t, m, `momopay_operator_breaker_open_circuits{operator="AIRTEL"}`, 1)
		wantSample(t, m, `momopay_operator_breaker_state{operator="MOOV"}`, 0)

		wantSample(t, m, `momopay_webhook_attempts_total{outcome="delivered"}`, 2)
		wantSample(t, m, `momopay_webhook_attempt_duration_seconds_count{outcome="delivered"}`, 2)
		wantSample(t, m, `momopay_webhook_deliveries_undelivered`, 0)
		// Each created payment keeps its expiry check scheduled at
		// expires_at, 5 minutes on.
		if n := sample(t, m, `momopay_jobs{queue="payments",state="scheduled"}`); n < 3 {
			t.Errorf("scheduled payment jobs: %v, want the 3 expiry checks at least", n)
		}
		sample(t, m, `momopay_jobs_oldest_due_age_seconds{queue="webhooks"}`)
		wantSample(t, m, `momopay_database_up`, 1)
		sample(t, m, `go_goroutines`)
		// The connection pools: PostgreSQL's main one and the job queues',
		// SQLite's writer and readers, each with its waits for a free
		// connection.
		pools := map[string][]string{"postgres": {"main", "jobs"}, "sqlite": {"writer", "readers"}}[engine]
		for _, pool := range pools {
			if n := sample(t, m, `go_sql_open_connections{db_name="`+pool+`"}`); n < 1 {
				t.Errorf("pool %s: %v connections open", pool, n)
			}
			sample(t, m, `go_sql_wait_count_total{db_name="`+pool+`"}`)
			sample(t, m, `go_sql_wait_duration_seconds_total{db_name="`+pool+`"}`)
		}
		if n := sample(t, m, `go_sql_max_open_connections{db_name="`+pools[0]+`"}`); n != map[string]float64{"postgres": 20, "sqlite": 1}[engine] {
			t.Errorf("pool %s: at most %v connections", pools[0], n)
		}
	})
}

// TestBacklogMetrics: with no worker running (as when every process is
// stuck), the due jobs age, a PENDING payment outlives expires_at and a
// webhook delivery is given up; the metrics say so, and /readyz refuses
// traffic because the job client does not run.
func TestBacklogMetrics(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		// River schedules with the wall clock: the service's clock
		// starts ten minutes ago, so the payment's jobs are long due.
		clk := testserver.NewClock(time.Now().Add(-10 * time.Minute))
		a, err := app.Open(t.Context(), app.Config{
			DatabaseURL: testdb.URL(t, engine), Now: clk.Now, MetricsRefresh: time.Nanosecond,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		m, err := a.Merchants.Create(t.Context(), "Backlog", "backlog@example.com", "correct horse battery", clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		initiate(t, a, m.ID, "stuck-1", sandbox.PhoneNoAnswer)
		// A payment settled while its merchant's endpoints were enabled:
		// the delivery to the one disabled next is undelivered with the
		// change; the other's waits, due.
		ep, err := a.Webhooks.CreateEndpoint(ctx, m.ID, "http://127.0.0.1:9/hook")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Webhooks.CreateEndpoint(ctx, m.ID, "http://127.0.0.1:9/other"); err != nil {
			t.Fatal(err)
		}
		paid := initiate(t, a, m.ID, "paid-1", sandbox.PhoneSuccess)
		if _, _, err := a.Payments.Settle(ctx, m.ID, paid.ID, payment.StatusSuccess, payment.SourceSandbox, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Webhooks.SetEndpointEnabled(ctx, m.ID, ep.ID, false); err != nil {
			t.Fatal(err)
		}
		admin := serveAdmin(t, a)
		scraped := scrape(t, admin)
		wantSample(t, scraped, `momopay_webhook_deliveries_undelivered`, 1)
		wantSample(t, scraped, `momopay_payments_pending`, 1)
		wantSample(t, scraped, `momopay_payments_pending_overdue`, 0)
		// Each payment's first poll was due 3 s after creation and its
		// expiry check 5 minutes after, both in the past for River: all
		// four are available and wait, the oldest for almost 10 minutes.
		// The webhook "queue" is the pending deliveries: the one not
		// attempted is due since the settlement.
		wantSample(t, scraped, `momopay_jobs{queue="payments",state="available"}`, 4)
		wantSample(t, scraped, `momopay_jobs{queue="payments",state="scheduled"}`, 0)
		wantSample(t, scraped, `momopay_jobs{queue="webhooks",state="available"}`, 1)
		wantSample(t, scraped, `momopay_jobs{queue="webhooks",state="running"}`, 0)
		wantSample(t, scraped, `momopay_jobs{queue="webhooks",state="scheduled"}`, 0)
		if age := sample(t, scraped, `momopay_jobs_oldest_due_age_seconds{queue="payments"}`); age < 590 || age > 900 {
			t.Errorf("oldest due payment job waited %v s, want about 597", age)
		}
		// It was due at the settlement, by the service's clock.
		if age := sample(t, scraped, `momopay_jobs_oldest_due_age_seconds{queue="webhooks"}`); age < 590 || age > 900 {
			t.Errorf("oldest due delivery waited %v s, want about 597", age)
		}

		// 20 s past expires_at is the expiry check's own time (its last
		// enquiry may be asked again), not yet overdue; a minute is.
		clk.Advance(5*time.Minute + 20*time.Second)
		wantSample(t, scrape(t, admin), `momopay_payments_pending_overdue`, 0)
		clk.Advance(40 * time.Second)
		wantSample(t, scrape(t, admin), `momopay_payments_pending_overdue`, 1)

		code, body := get(t, admin+"/readyz")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "job client not running") {
			t.Errorf("/readyz without Serve: %d %s", code, body)
		}
	})
}

// serveAdmin serves a's admin listener on a loopback port until the test ends.
func serveAdmin(t *testing.T, a *app.App) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.ServeAdmin(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + ln.Addr().String()
}

// TestProbes: /livez answers while the process runs; /readyz is 200 while
// the database answers and 503 with the reason once it is gone, while the
// metrics keep being served (without the database's series).
func TestProbes(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{Admin: true})
	if code, body := get(t, s.AdminURL+"/livez"); code != http.StatusOK || !strings.Contains(body, `"ok"`) {
		t.Fatalf("/livez: %d %s", code, body)
	}
	if code, body := get(t, s.AdminURL+"/readyz"); code != http.StatusOK || !strings.Contains(body, `"ready"`) {
		t.Fatalf("/readyz while serving: %d %s", code, body)
	}
	if err := s.App.DB.Close(); err != nil {
		t.Fatal(err)
	}
	code, body := get(t, s.AdminURL+"/readyz")
	var probe struct{ Status, Reason string }
	json.Unmarshal([]byte(body), &probe)
	if code != http.StatusServiceUnavailable || probe.Status != "unavailable" || !strings.HasPrefix(probe.Reason, "database unreachable") {
		t.Errorf("/readyz with the database closed: %d %s", code, body)
	}
	if code, _ := get(t, s.AdminURL+"/livez"); code != http.StatusOK {
		t.Errorf("/livez with the database closed: %d", code)
	}
	m := scrape(t, s.AdminURL)
	wantSample(t, m, "momopay_database_up", 0)
	if strings.Contains(m, "momopay_payments_pending ") {
		t.Error("database series served without a database")
	}
}

// TestPprofOnlyOnAdmin: the profiler answers on the admin listener and
// nowhere on the public one.
func TestPprofOnlyOnAdmin(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{Admin: true})
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/goroutine?debug=1", "/metrics", "/readyz", "/livez"} {
		if code, _ := get(t, s.URL+path); code != http.StatusNotFound {
			t.Errorf("public %s: %d, want 404", path, code)
		}
	}
	if code, body := get(t, s.AdminURL+"/debug/pprof/goroutine?debug=1"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("admin pprof: %d", code)
	}
	if code, body := get(t, s.AdminURL+"/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "heap") {
		t.Errorf("admin pprof index: %d", code)
	}
}

// logLines decodes JSON log lines, failing on any line that is not one.
func logLines(t testing.TB, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("log line is not JSON: %v: %s", err, sc.Text())
		}
		out = append(out, line)
	}
	return out
}

// TestNoSecretInLogs drives a served momopay through everything that
// handles a secret (API keys used, revoked and guessed; a webhook endpoint's
// signing secret, deliveries and a test event; the operator's signed
// callbacks and forged ones carrying credentials; merchants' passwords at
// /auth/login when the dashboard serves it) with every log line captured at
// debug level, and finds none of those secrets, nor a recognisable piece
// of one, in the log. It also checks what a request line carries.
func TestNoSecretInLogs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var log testlog.Buffer
	s := testserver.Start(t, testserver.Options{Log: &log})
	secrets := map[string]string{
		"API key":                 s.APIKey,
		"test merchant password":  "correct horse battery",
		"sandbox callback secret": string(s.App.SandboxCallbackSecret),
	}

	password := "pw-" + strings.ToLower(rand32())
	merchant, err := s.App.Merchants.Create(ctx, "Secretive", "secretive@example.com", password, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	secrets["merchant password"] = password
	_, key, err := s.App.APIKeys.Create(ctx, merchant.ID, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	secrets["second API key"] = key
	revokedID, revoked, err := s.App.APIKeys.Create(ctx, merchant.ID, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.App.APIKeys.Revoke(ctx, merchant.ID, revokedID.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	secrets["revoked API key"] = revoked
	guessed := "service_live_" + rand32()
	secrets["guessed API key"] = guessed

	rc := &receiver{}
	hook := httptest.NewServer(rc)
	defer hook.Close()
	ep, err := s.App.Webhooks.CreateEndpoint(ctx, merchant.ID, hook.URL+"/hook")
	if err != nil {
		t.Fatal(err)
	}
	secrets["webhook secret"] = ep.Secret
	if _, err := s.App.Webhooks.Test(ctx, merchant.ID, ep.ID); err != nil {
		t.Fatal(err)
	}

	// Payments settled by the operator's signed callbacks, and deliveries.
	_, paid := createPayment(t, s, key, "secret-1", "AIRTEL", sandbox.PhoneSuccess)
	_, refused := createPayment(t, s, key, "secret-2", "MOOV", sandbox.PhoneFailure)
	waitFinal(t, s, key, paid["id"].(string))
	waitFinal(t, s, key, refused["id"].(string))
	eventually(t, "three webhook requests", func() bool { return rc.count() == 3 })

	if code, _ := createPayment(t, s, key, "secret-3", "AIRTEL", sandbox.PhoneUnavailable); code != http.StatusServiceUnavailable {
		t.Fatalf("a payment to the sandbox's unavailable operator: %d", code)
	}
	if code, _ := call(t, http.MethodGet, s.URL+"/v1/transactions", s.APIKey, ""); code != http.StatusOK {
		t.Fatalf("list: %d", code)
	}
	// Refused authentications, each carrying a key.
	for _, h := range []string{"Bearer " + revoked, "Bearer " + guessed, "Basic " + key, guessed} {
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/v1/transactions?api_key="+guessed, nil)
		req.Header.Set("Authorization", h)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("authentication with %q: %d", h[:6], resp.StatusCode)
		}
	}
	// Forged callbacks: a credential in the header, a wrong signature made
	// with a guessed secret, a body naming the secret.
	operatorPassword := "op-" + rand32()
	secrets["operator credential"] = operatorPassword
	body := airtelsim.SignedCallback([]byte(operatorPassword), "SERVICE-ABCDEFGH", "TS", "paid", "AM-FORGED")
	call(t, http.MethodPost, s.URL+"/callbacks/airtel", "", string(body), "X-Signature", "forged-"+operatorPassword,
		"Authorization", "Basic "+operatorPassword, "X-Callback-Token", operatorPassword)
	call(t, http.MethodPost, s.URL+"/callbacks/airtel", "", `{"secret":"`+operatorPassword+`"}`)

	// The dashboard's login, when this build has one: right and wrong
	// passwords, and whatever session it hands out.
	for _, pw := range []string{password, password + "-wrong"} {
		form := "email=secretive%40example.com&password=" + pw
		// Not following the redirect: the session cookie comes with it.
		noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noRedirect.Post(s.URL+"/auth/login", "application/x-www-form-urlencoded", strings.NewReader(form))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		for _, c := range resp.Cookies() {
			secrets["session cookie "+c.Name] = c.Value
			// A signed-in page, whose request line names the merchant.
			req, _ := http.NewRequest(http.MethodGet, s.URL+"/keys", nil)
			req.AddCookie(c)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
			// Signing out, whose request line names the merchant too.
			req, _ = http.NewRequest(http.MethodPost, s.URL+"/auth/logout", nil)
			req.AddCookie(c)
			if resp, err := noRedirect.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}

	out := log.String()
	lines := logLines(t, out)
	if len(lines) < 20 {
		t.Fatalf("only %d log lines: is the log captured?", len(lines))
	}
	for what, secret := range secrets {
		if len(secret) < 12 {
			continue // an empty cookie, say: nothing to find
		}
		// The whole secret, and its last 12 characters: a secret logged
		// without its prefix, or cut, is still a leak.
		for _, needle := range []string{secret, secret[len(secret)-12:]} {
			if i := strings.Index(out, needle); i >= 0 {
				t.Errorf("the %s appears in the log: ...%s...", what, out[max(0, i-200):i])
			}
		}
	}

	// Request lines: id, merchant, route, status, latency; a payment line
	// and a delivery line carry their ids.
	var request, page, signOut, unavailable, requested, delivered bool
	for _, l := range lines {
		switch l["msg"] {
		case "request":
			if l["method"] == "POST" && l["route"] == "/v1/transactions" && l["status"] == float64(201) {
				request = l["merchant_id"] == merchant.ID && l["request_id"] != "" && l["level"] == "INFO" && l["duration_ms"] != nil
			}
			if l["route"] == "/keys" && l["status"] == float64(200) {
				page = l["merchant_id"] == merchant.ID
			}
			if l["route"] == "/auth/logout" && l["status"] == float64(303) {
				signOut = signOut || l["merchant_id"] == merchant.ID
			}
			if l["route"] == "/v1/transactions" && l["status"] == float64(503) {
				unavailable = l["level"] == "WARN"
			}
		case "payment requested":
			requested = requested || l["transaction_id"] == paid["id"]
		case "webhook delivered":
			delivered = delivered || l["delivery_id"] != nil
		}
	}
	if !request || !page || !signOut || !unavailable || !requested || !delivered {
		t.Errorf("request line with its fields %v, a dashboard page's naming its merchant %v, a sign-out's %v, a 503's at WARN %v, payment line %v, delivery line %v",
			request, page, signOut, unavailable, requested, delivered)
	}
}

func rand32() string { return rand.Text() }

// served is a "momopay serve" run in-process by serveCLI.
type served struct {
	out, log *testlog.Buffer
	// urlOf waits for the log line msg and returns its url.
	urlOf func(msg string) string
	// stop ends it, as SIGTERM does, and waits for serve to return.
	stop func() error
}

// serveCLI runs "momopay serve" in-process, as main does, until the test
// ends (or stop), and returns its output and log.
func serveCLI(t *testing.T, env map[string]string, args ...string) *served {
	t.Helper()
	var stdout, stderr testlog.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	args = append([]string{"serve", "--db", t.TempDir() + "/m.db", "--addr", "127.0.0.1:0"}, args...)
	go func() {
		done <- app.Run(ctx, args, func(k string) string { return env[k] }, strings.NewReader(""), &stdout, &stderr)
	}()
	var once sync.Once
	var err error
	stop := func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	urlOf := func(msg string) string {
		var url string
		eventually(t, "the line "+msg, func() bool {
			for line := range strings.Lines(stderr.String()) {
				var l map[string]any
				if json.Unmarshal([]byte(line), &l) == nil && l["msg"] == msg {
					url, _ = l["url"].(string)
					return true
				}
			}
			return false
		})
		return url
	}
	return &served{out: &stdout, log: &stderr, urlOf: urlOf, stop: stop}
}

// TestServeAdminListener: serve opens the admin listener named by
// --admin-addr (or MOMOPAY_ADMIN_ADDR), logs JSON when its output is not a
// terminal, and takes its log settings from flags or the environment.
func TestServeAdminListener(t *testing.T) {
	t.Parallel()
	s := serveCLI(t, nil, "--admin-addr", "127.0.0.1:0")
	log, admin, public := s.log, s.urlOf("admin listening"), s.urlOf("momopay listening")
	eventually(t, "/readyz 200", func() bool { code, _ := get(t, admin+"/readyz"); return code == http.StatusOK })
	if code, body := get(t, admin+"/metrics"); code != http.StatusOK || !strings.Contains(body, "momopay_database_up 1") {
		t.Errorf("/metrics: %d", code)
	}
	if code, _ := get(t, public+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	for _, l := range logLines(t, log.String()) {
		if l["level"] == "DEBUG" {
			t.Errorf("a DEBUG line at the default level: %v", l)
		}
	}

	// From the environment: text at debug level, and no admin listener.
	textLog := serveCLI(t, map[string]string{"MOMOPAY_ADMIN_ADDR": "off", "MOMOPAY_LOG_FORMAT": "text", "MOMOPAY_LOG_LEVEL": "debug"}).log
	eventually(t, "the text line", func() bool { return strings.Contains(textLog.String(), `msg="momopay listening"`) })
	out := textLog.String()
	url := out[strings.Index(out, `msg="momopay listening" url=`)+len(`msg="momopay listening" url=`):]
	url = url[:strings.IndexByte(url, ' ')]
	get(t, url+"/healthz")
	eventually(t, "a DEBUG request line", func() bool { return strings.Contains(textLog.String(), "level=DEBUG msg=request") })
	if strings.Contains(textLog.String(), "admin listening") {
		t.Error("MOMOPAY_ADMIN_ADDR=off still opened the admin listener")
	}
}

// TestServeRefusesBadLogAndAdminSettings: a bad log setting or admin
// address is refused before anything starts, naming the setting.
func TestServeRefusesBadLogAndAdminSettings(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cases := []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"--log-format", "xml"}, `--log-format "xml" is not a format`},
		{nil, []string{"--log-level", "loud"}, `--log-level "loud" is not a level`},
		{map[string]string{"MOMOPAY_LOG_LEVEL": "verbose"}, nil, `--log-level "verbose" is not a level`},
		{map[string]string{"MOMOPAY_LOG_FORMAT": "yaml"}, nil, `--log-format "yaml" is not a format`},
		{nil, []string{"--admin-addr", busy.Addr().String()}, "cannot listen on " + busy.Addr().String() + " for the admin listener"},
	}
	for _, c := range cases {
		db := t.TempDir() + "/refused.db"
		_, _, err := cliRun(t, c.env, "", append([]string{"serve", "--db", db, "--addr", "127.0.0.1:0"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("serve %v %v: %v, want %q", c.env, c.args, err, c.want)
		}
	}
}
