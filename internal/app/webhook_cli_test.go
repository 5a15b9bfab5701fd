package app_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/app"
	"github.com/momopay/momopay/internal/operator/sandbox"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/team"
	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testserver"
)

// run runs the momopay command line in-process, as main does.
func run(t *testing.T, env map[string]string, stdin string, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := app.Run(context.Background(), args, func(k string) string { return env[k] }, strings.NewReader(stdin), &stdout, &stderr)
	return stdout.String(), err
}

// runJSON runs a command with --json that must succeed and decodes stdout.
func runJSON(t *testing.T, env map[string]string, args ...string) map[string]any {
	t.Helper()
	// Flags end at the first argument that is not one: put --json first.
	full := append([]string{args[0], args[1], "--json"}, args[2:]...)
	out, err := run(t, env, "", full...)
	if err != nil {
		t.Fatalf("momopay %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("momopay %s: stdout is not JSON: %v\n%s", strings.Join(args, " "), err, out)
	}
	return v
}

// hookReceiver records what it is sent and answers with status(n).
type hookReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	heads  []http.Header
	status func(n int) int
}

func newHookReceiver(t *testing.T, status func(n int) int) *hookReceiver {
	rc := &hookReceiver{status: status}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.bodies, rc.heads = append(rc.bodies, b), append(rc.heads, r.Header.Clone())
		n := len(rc.bodies)
		rc.mu.Unlock()
		if rc.status != nil {
			w.WriteHeader(rc.status(n))
		}
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *hookReceiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.bodies)
}

func (rc *hookReceiver) last() (http.Header, []byte) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.heads[len(rc.heads)-1], rc.bodies[len(rc.bodies)-1]
}

func (rc *hookReceiver) body(i int) []byte {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.bodies[i]
}

func signed(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func newMerchantCLI(t *testing.T, env map[string]string) string {
	t.Helper()
	if out, err := run(t, env, "", "migrate"); err != nil { // only serve and migrate create a database
		t.Fatalf("migrate: %v %s", err, out)
	}
	out, err := run(t, env, "correct horse battery\n", "merchant", "create", "--name", "Shop", "--email", "shop@example.com", "--password-stdin", "--json")
	if err != nil {
		t.Fatalf("merchant create: %v", err)
	}
	var m map[string]string
	json.Unmarshal([]byte(out), &m)
	return m["id"]
}

func TestWebhookCLIEndpoints(t *testing.T) {
	t.Parallel()
	env := map[string]string{"MOMOPAY_DATABASE_URL": filepath.Join(t.TempDir(), "cli.db")}
	merchant := newMerchantCLI(t, env)
	fail := false
	var failMu sync.Mutex
	rc := newHookReceiver(t, func(int) int {
		failMu.Lock()
		defer failMu.Unlock()
		if fail {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})

	created := runJSON(t, env, "webhook", "create", "--merchant", merchant, "--url", rc.URL)
	secret, _ := created["secret"].(string)
	id, _ := created["id"].(string)
	if len(created) != 3 || created["url"] != rc.URL || !strings.HasPrefix(secret, "whsec_") || id == "" {
		t.Fatalf("create printed %v, want exactly id, url and secret", created)
	}

	for _, args := range [][]string{{"--json"}, {}} {
		out, err := run(t, env, "", append([]string{"webhook", "list", "--merchant", merchant}, args...)...)
		if err != nil || !strings.Contains(out, id) || strings.Contains(out, "whsec_") || strings.Contains(out, "secret") {
			t.Fatalf("list %v: %v\n%s\n(want the endpoint, no secret)", args, err, out)
		}
	}

	res := runJSON(t, env, "webhook", "test", "--merchant", merchant, id)
	if res["succeeded"] != true || res["status_code"] != float64(200) || res["delivery_id"] == "" {
		t.Fatalf("test printed %v", res)
	}
	h, body := rc.last()
	if rc.count() != 1 || h.Get("X-Service-Test") != "true" || h.Get("X-Service-Signature") != signed(secret, body) ||
		!strings.Contains(string(body), `"event":"transaction.test"`) {
		t.Fatalf("receiver got %d requests; last %v %s", rc.count(), h, body)
	}
	failMu.Lock()
	fail = true
	failMu.Unlock()
	if out, err := run(t, env, "", "webhook", "test", "--merchant", merchant, id); err == nil || !strings.Contains(err.Error(), "HTTP 500") {
		t.Fatalf("test against a failing receiver: %v\n%s", err, out)
	}

	if out, err := run(t, env, "", "webhook", "disable", "--merchant", merchant, id); err != nil || !strings.Contains(out, "disabled") {
		t.Fatalf("disable: %v %s", err, out)
	}
	list := runJSON(t, env, "webhook", "list", "--merchant", merchant)["endpoints"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["enabled"] != false {
		t.Fatalf("after disable: %v", list)
	}
	if _, err := run(t, env, "", "webhook", "delete", "--merchant", merchant, id); err != nil {
		t.Fatal(err)
	}
	if list := runJSON(t, env, "webhook", "list", "--merchant", merchant)["endpoints"].([]any); len(list) != 0 {
		t.Fatalf("after delete: %v", list)
	}

	errorsWanted := []struct {
		args []string
		want string
	}{
		{[]string{"webhook", "delete", "--merchant", merchant, id}, "not found"},
		{[]string{"webhook", "test", "--merchant", merchant, id}, "not found"},
		{[]string{"webhook", "create", "--merchant", merchant, "--url", "ftp://example.com/"}, "http:// or https://"},
		{[]string{"webhook", "create", "--merchant", merchant}, "usage"},
		{[]string{"webhook", "create", "--url", rc.URL}, "--merchant is required"},
		{[]string{"webhook", "list", "--merchant", "5b0e8b8e-0000-4000-8000-000000000000"}, "no merchant"},
		{[]string{"webhook", "disable", "--merchant", merchant}, "usage"},
		{[]string{"webhook", "resend", "--merchant", merchant, "not-a-delivery"}, "not found"},
		{[]string{"webhook", "frobnicate"}, "unknown command"},
	}
	for _, tt := range errorsWanted {
		if out, err := run(t, env, "", tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("momopay %s: %v (stdout %q), want an error about %q", strings.Join(tt.args, " "), err, out, tt.want)
		}
	}
	// In words, the secret comes with which signature to check with it:
	// webhook-signature, the one that survives a rotation.
	if out, err := run(t, env, "", "webhook", "create", "--merchant", merchant, "--url", rc.URL+"?words"); err != nil ||
		!strings.Contains(out, "verify webhook-signature with it") || !strings.Contains(out, "whsec_") {
		t.Errorf("create in words: %v\n%s", err, out)
	}
	// MOMOPAY_MODE is honoured: live mode never registers an http URL. An
	// administrative command needs no session secret, even in live mode.
	live := map[string]string{"MOMOPAY_DATABASE_URL": env["MOMOPAY_DATABASE_URL"], "MOMOPAY_MODE": "live"}
	if _, err := run(t, live, "", "webhook", "create", "--merchant", merchant, "--url", rc.URL); err == nil || !strings.Contains(err.Error(), "https") {
		t.Errorf("live mode and an http loopback URL: %v, want a refusal asking for https", err)
	}
	if out, err := run(t, live, "", "webhook", "list", "--merchant", merchant); err != nil || !strings.Contains(out, "URL") {
		t.Errorf("webhook list in live mode without a session secret: %v %q", err, out)
	}
}

// TestWebhookCLIDeliveriesAndResend drives a delivery to undelivered with
// an app on a fake clock, then lists and re-sends it from the command line.
func TestWebhookCLIDeliveriesAndResend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "cli.db")
	env := map[string]string{"MOMOPAY_DATABASE_URL": dbPath}
	merchant := newMerchantCLI(t, env)
	rc := newHookReceiver(t, func(n int) int {
		if n <= 6 {
			return http.StatusBadGateway
		}
		return http.StatusAccepted
	})
	endpoint := runJSON(t, env, "webhook", "create", "--merchant", merchant, "--url", rc.URL)

	now := time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)
	a, err := app.Open(ctx, app.Config{DatabaseURL: dbPath, Now: func() time.Time { return now },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := a.Payments.Initiate(ctx, merchant, payment.CreateRequest{Reference: "cli-1", Amount: 900, Currency: "XAF",
		Operator: "AIRTEL", PhoneNumber: sandbox.PhoneNoAnswer})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Payments.Settle(ctx, merchant, tx.ID, payment.StatusFailed, payment.SourceSandbox, ""); err != nil {
		t.Fatal(err)
	}
	ds, _ := a.Webhooks.Deliveries(ctx, merchant, 0)
	deliveryID := ds[0].ID
	// A manual attempt of the pending delivery fails: it stays pending and
	// its five automatic attempts still come.
	if _, err := run(t, env, "", "webhook", "resend", "--merchant", merchant, deliveryID); err == nil ||
		!strings.Contains(err.Error(), "HTTP 502") || !strings.Contains(err.Error(), "still pending, next automatic attempt at 2026-05-01T08:00:00Z") {
		t.Fatalf("re-send of a pending delivery: %v", err)
	}
	for {
		wait, err := a.Webhooks.Attempt(ctx, merchant, deliveryID)
		if err != nil {
			t.Fatal(err)
		}
		if wait == 0 {
			break
		}
		now = now.Add(wait)
	}
	a.Close()

	got := runJSON(t, env, "webhook", "deliveries", "--merchant", merchant)["deliveries"].([]any)
	d := got[0].(map[string]any)
	attempts := d["attempts"].([]any)
	if len(got) != 1 || d["id"] != deliveryID || d["state"] != "undelivered" || d["event"] != "transaction.failed" ||
		d["endpoint_id"] != endpoint["id"] || d["transaction_id"] != tx.ID || len(attempts) != 6 || d["test"] != false {
		t.Fatalf("deliveries printed %v", got)
	}
	if a1 := attempts[0].(map[string]any); a1["number"] != float64(1) || a1["manual"] != true {
		t.Fatalf("first attempt %v, want the manual one", a1)
	}
	if a6 := attempts[5].(map[string]any); a6["number"] != float64(6) || a6["status_code"] != float64(502) || a6["manual"] != false ||
		a6["attempted_at"] != "2026-05-01T10:36:00.000000Z" {
		t.Fatalf("fifth automatic attempt %v, want 502 at 2 h 36 min", a6)
	}
	if out, err := run(t, env, "", "webhook", "deliveries", "--merchant", merchant); err != nil || !strings.Contains(out, "undelivered") || !strings.Contains(out, "HTTP 502") {
		t.Fatalf("deliveries table: %v\n%s", err, out)
	}

	out, err := run(t, env, "", "webhook", "resend", "--merchant", merchant, deliveryID)
	if err != nil || !strings.Contains(out, "delivered (HTTP 202") {
		t.Fatalf("resend: %v\n%s", err, out)
	}
	h, body := rc.last()
	if rc.count() != 7 || h.Get("X-Service-Delivery-Id") != deliveryID || !bytes.Equal(body, rc.body(0)) ||
		h.Get("X-Service-Signature") != signed(endpoint["secret"].(string), body) {
		t.Fatalf("re-send: %d requests, id %s, same bytes %v", rc.count(), h.Get("X-Service-Delivery-Id"), bytes.Equal(body, rc.body(0)))
	}
	d = runJSON(t, env, "webhook", "deliveries", "--merchant", merchant)["deliveries"].([]any)[0].(map[string]any)
	attempts = d["attempts"].([]any)
	if d["state"] != "delivered" || len(attempts) != 7 || attempts[6].(map[string]any)["manual"] != true {
		t.Fatalf("after re-send: %v", d)
	}
	if _, err := run(t, env, "", "webhook", "resend", "--merchant", merchant, deliveryID); err == nil {
		t.Fatal("re-send of a delivered delivery succeeded")
	}
	// The audit log has the two re-sends that were made (the first one's
	// attempt failed, but it was sent), not the refused third.
	var resent []string
	for _, e := range auditEntries(t, dbPath, merchant) {
		if e.Action == team.ActionDeliveryResent {
			resent = append(resent, e.Target)
		}
	}
	if len(resent) != 2 || resent[0] != deliveryID || resent[1] != deliveryID {
		t.Errorf("re-sends in the audit log: %q", resent)
	}
}

// TestWebhookCLIWhileServing registers an endpoint from the command line
// on the database of a running server, which then delivers to it.
func TestWebhookCLIWhileServing(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, engine string) {
		s := testserver.Start(t, testserver.Options{DB: engine})
		env := map[string]string{"MOMOPAY_DATABASE_URL": s.DatabaseURL}
		rc := newHookReceiver(t, nil)
		runJSON(t, env, "webhook", "create", "--merchant", s.MerchantID, "--url", rc.URL)

		body := `{"reference":"cli-live-1","amount":1500,"currency":"XAF","operator":"MOOV","phone_number":"` + sandbox.PhoneSuccess + `"}`
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/transactions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+s.APIKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("create payment: %v %v", err, resp)
		}
		resp.Body.Close()

		deadline := time.Now().Add(15 * time.Second)
		for {
			ds := runJSON(t, env, "webhook", "deliveries", "--merchant", s.MerchantID)["deliveries"].([]any)
			if len(ds) == 1 && ds[0].(map[string]any)["state"] == "delivered" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no delivered delivery after 15 s: %v (receiver saw %d)", ds, rc.count())
			}
			time.Sleep(100 * time.Millisecond)
		}
		if _, b := rc.last(); rc.count() != 1 || !strings.Contains(string(b), `"event":"transaction.success"`) {
			t.Fatalf("receiver saw %d requests: %s", rc.count(), b)
		}
	})
}

// TestWebhookCLIManage runs the endpoint management commands on both
// engines: a second registration of one URL is refused, a disabled
// endpoint is enabled again, a test event shows in the history as such, and
// a pending delivery is re-sent at once, each with --json honoured.
func TestWebhookCLIManage(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, engine string) {
		ctx := context.Background()
		dbURL := testdb.URL(t, engine)
		env := map[string]string{"MOMOPAY_DATABASE_URL": dbURL}
		merchant := newMerchantCLI(t, env) // migrates first
		var mu sync.Mutex
		answer := http.StatusOK
		rc := newHookReceiver(t, func(int) int {
			mu.Lock()
			defer mu.Unlock()
			return answer
		})
		setAnswer := func(code int) {
			mu.Lock()
			answer = code
			mu.Unlock()
		}
		ep := runJSON(t, env, "webhook", "create", "--merchant", merchant, "--url", rc.URL)
		id := ep["id"].(string)

		// The same receiver under another spelling of its URL.
		dup := strings.Replace(rc.URL, "http://", "HTTP://", 1) + "/"
		if out, err := run(t, env, "", "webhook", "create", "--merchant", merchant, "--url", dup, "--json"); err == nil ||
			!strings.Contains(err.Error(), "registered already, as endpoint "+id) || out != "" {
			t.Fatalf("second registration of %s: %v (stdout %q)", dup, err, out)
		}

		if _, err := run(t, env, "", "webhook", "disable", "--merchant", merchant, id); err != nil {
			t.Fatal(err)
		}
		if r := runJSON(t, env, "webhook", "enable", "--merchant", merchant, id); r["id"] != id || r["status"] != "enabled" || len(r) != 2 {
			t.Fatalf("enable --json printed %v", r)
		}
		if out, err := run(t, env, "", "webhook", "enable", "--merchant", merchant, id); err != nil || out != "webhook endpoint "+id+" enabled\n" {
			t.Fatalf("enable: %v %q", err, out)
		}
		if list := runJSON(t, env, "webhook", "list", "--merchant", merchant)["endpoints"].([]any); len(list) != 1 || list[0].(map[string]any)["enabled"] != true {
			t.Fatalf("after enable: %v", list)
		}
		if _, err := run(t, env, "", "webhook", "enable", "--merchant", merchant, "5b0e8b8e-0000-4000-8000-000000000000"); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Fatalf("enable of an unknown endpoint: %v", err)
		}

		// A test event is in the history, marked as a test.
		res := runJSON(t, env, "webhook", "test", "--merchant", merchant, id)
		testID, _ := res["delivery_id"].(string)
		ds := runJSON(t, env, "webhook", "deliveries", "--merchant", merchant)["deliveries"].([]any)
		if len(ds) != 1 {
			t.Fatalf("deliveries after a test: %v", ds)
		}
		d := ds[0].(map[string]any)
		attempts, _ := d["attempts"].([]any)
		_, hasTransaction := d["transaction_id"]
		if d["id"] != testID || d["test"] != true || d["event"] != "transaction.test" || hasTransaction || d["state"] != "delivered" ||
			d["endpoint_id"] != id || len(attempts) != 1 || attempts[0].(map[string]any)["status_code"] != float64(200) {
			t.Fatalf("test delivery printed %v", d)
		}
		out, err := run(t, env, "", "webhook", "deliveries", "--merchant", merchant)
		if err != nil || !strings.Contains(out, testID+"  transaction.test  test event  delivered") || !strings.Contains(out, "(test)") {
			t.Fatalf("deliveries table: %v\n%s", err, out)
		}
		if _, err := run(t, env, "", "webhook", "resend", "--merchant", merchant, testID); err == nil || !strings.Contains(err.Error(), "test event") {
			t.Fatalf("re-send of a test event: %v", err)
		}

		// A pending delivery, never attempted (no server runs), newer
		// than the test event.
		now := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
		a, err := app.Open(ctx, app.Config{DatabaseURL: dbURL, Now: func() time.Time { return now },
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		tx, err := a.Payments.Initiate(ctx, merchant, payment.CreateRequest{Reference: "cli-manage-1", Amount: 900, Currency: "XAF",
			Operator: "MOOV", PhoneNumber: sandbox.PhoneNoAnswer})
		if err == nil {
			_, _, err = a.Payments.Settle(ctx, merchant, tx.ID, payment.StatusSuccess, payment.SourceSandbox, "")
		}
		a.Close()
		if err != nil {
			t.Fatal(err)
		}
		ds = runJSON(t, env, "webhook", "deliveries", "--merchant", merchant)["deliveries"].([]any)
		pending := ds[0].(map[string]any)
		pendingID, _ := pending["id"].(string)
		if pending["state"] != "pending" || pending["transaction_id"] != tx.ID || pending["test"] != false {
			t.Fatalf("newest delivery %v, want the pending one", pending)
		}

		setAnswer(http.StatusServiceUnavailable)
		if out, err := run(t, env, "", "webhook", "resend", "--merchant", merchant, pendingID); err == nil || !strings.Contains(err.Error(), "HTTP 503") ||
			!strings.Contains(err.Error(), "still pending, next automatic attempt at "+now.Format(time.RFC3339)) {
			t.Fatalf("failed re-send of a pending delivery: %v\n%s", err, out)
		}
		setAnswer(http.StatusOK)
		r := runJSON(t, env, "webhook", "resend", "--merchant", merchant, pendingID)
		at, _ := r["attempt"].(map[string]any)
		if r["delivery_id"] != pendingID || r["state"] != "delivered" || r["next_attempt_at"] != nil ||
			at["succeeded"] != true || at["manual"] != true || at["number"] != float64(2) {
			t.Fatalf("re-send --json printed %v", r)
		}
		if h, _ := rc.last(); rc.count() != 3 || h.Get("X-Service-Delivery-Id") != pendingID || h.Get("X-Service-Test") != "" {
			t.Fatalf("receiver saw %d requests, last %v", rc.count(), h)
		}
		out, err = run(t, env, "", "webhook", "deliveries", "--merchant", merchant)
		if err != nil || !strings.Contains(out, pendingID+"  transaction.success  transaction "+tx.ID+"  delivered  2 attempt(s)") ||
			!strings.Contains(out, "HTTP 503") || strings.Count(out, "(manual)") != 2 {
			t.Fatalf("deliveries table after re-sends: %v\n%s", err, out)
		}
	})
}

// TestWebhookCLIPrune: webhook prune deletes the deliveries that are over
// and older than --days, keeps pending ones, counts without deleting on a
// dry run, and refuses a missing --days or an unknown merchant.
func TestWebhookCLIPrune(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "cli.db")
	env := map[string]string{"MOMOPAY_DATABASE_URL": dbPath}
	merchant := newMerchantCLI(t, env)
	rc := newHookReceiver(t, nil)
	runJSON(t, env, "webhook", "create", "--merchant", merchant, "--url", rc.URL)

	// Two payments settled 60 days ago: one delivery delivered, the other
	// never tried (still pending).
	now := time.Now().Add(-60 * 24 * time.Hour)
	a, err := app.Open(ctx, app.Config{DatabaseURL: dbPath, Now: func() time.Time { return now },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		tx, err := a.Payments.Initiate(ctx, merchant, payment.CreateRequest{Reference: fmt.Sprintf("prune-%d", i), Amount: 900,
			Currency: "XAF", Operator: "AIRTEL", PhoneNumber: sandbox.PhoneNoAnswer})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.Payments.Settle(ctx, merchant, tx.ID, payment.StatusFailed, payment.SourceSandbox, ""); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			ds, _ := a.Webhooks.Deliveries(ctx, merchant, 0)
			if _, err := a.Webhooks.Attempt(ctx, merchant, ds[0].ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	a.Close()

	dry := map[string]string{"MOMOPAY_DATABASE_URL": dbPath, "MOMOPAY_WEBHOOK_HISTORY_DAYS": "30", "MOMOPAY_PRUNE_DRY_RUN": "true"}
	if got := runJSON(t, dry, "webhook", "prune"); got["deleted"] != float64(1) || got["dry_run"] != true {
		t.Errorf("dry run from the variables: %v, want 1 to delete", got)
	}
	if out, err := run(t, env, "", "webhook", "prune", "--days", "90"); err != nil || !strings.HasPrefix(out, "deleted 0 finished delivery(ies)") {
		t.Errorf("prune --days 90: %v %q, want nothing deleted", err, out)
	}
	if out, err := run(t, env, "", "webhook", "prune", "--days", "30"); err != nil || !strings.HasPrefix(out, "deleted 1 finished delivery(ies)") {
		t.Errorf("prune --days 30: %v %q, want 1 deleted", err, out)
	}
	left := runJSON(t, env, "webhook", "deliveries", "--merchant", merchant)["deliveries"].([]any)
	if len(left) != 1 || left[0].(map[string]any)["state"] != "pending" {
		t.Errorf("deliveries left: %v, want the pending one", left)
	}
	if _, err := run(t, env, "", "webhook", "prune"); err == nil || !strings.Contains(err.Error(), "--days must be") {
		t.Errorf("prune without --days: %v", err)
	}
	if _, err := run(t, env, "", "webhook", "prune", "--days", "30", "--merchant", "7d2f4a5e-0000-4000-8000-000000000000"); err == nil ||
		!strings.Contains(err.Error(), "no merchant") {
		t.Errorf("prune for an unknown merchant: %v", err)
	}
}
