package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testserver"
)

// wireTime is the one timestamp format of the API and of webhooks.
var wireTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)

// TestTimeFormat checks every timestamp the service writes, in API answers
// (create, read, list) and in webhook bodies (a settled payment's event and
// the test event), at instants whose microseconds end in zeros: those were
// trimmed (…18.73165Z) and the test event's timestamp had nanoseconds.
func TestTimeFormat(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		// Just behind the real time, so the jobs the fake instants schedule
		// are due at once: created at .120000, settled at .000000.
		start := time.Now().UTC().Truncate(time.Second).Add(-2*time.Second + 120*time.Millisecond + 7*time.Nanosecond)
		clock := testserver.NewClock(start)
		s := testserver.Start(t, testserver.Options{DB: engine, Now: clock.Now})

		bodies := make(chan []byte, 10)
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			bodies <- b
		}))
		defer receiver.Close()
		endpoint, err := s.App.Webhooks.CreateEndpoint(t.Context(), s.MerchantID, receiver.URL)
		if err != nil {
			t.Fatal(err)
		}

		created := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(nil))
		id, _ := created.body["id"].(string)
		if created.status != 201 || created.body["created_at"] != start.Format("2006-01-02T15:04:05")+".120000Z" {
			t.Fatalf("create: %d %s, want created_at ending .120000Z", created.status, created.raw)
		}
		clock.Advance(880 * time.Millisecond)
		if _, _, err := s.App.Payments.Settle(t.Context(), s.MerchantID, id, payment.StatusSuccess, payment.SourceSandbox, "test"); err != nil {
			t.Fatal(err)
		}
		read := do(t, s, "GET", "/v1/transactions/"+id, s.APIKey, nil)
		if read.body["updated_at"] != clock.Now().Truncate(time.Second).Format("2006-01-02T15:04:05")+".000000Z" {
			t.Errorf("updated_at %v, want a whole second with six zeros", read.body["updated_at"])
		}
		list := do(t, s, "GET", "/v1/transactions", s.APIKey, nil)
		item := list.body["data"].([]any)[0].(map[string]any)
		checkTimes(t, "create", created.body, "created_at", "updated_at", "expires_at")
		checkTimes(t, "read", read.body, "created_at", "updated_at", "expires_at")
		checkTimes(t, "list", item, "created_at", "updated_at")

		event := receive(t, bodies)
		if event["event"] != "transaction.success" {
			t.Fatalf("event %v", event["event"])
		}
		checkTimes(t, "event", event, "timestamp")
		checkTimes(t, "event data", event["data"].(map[string]any), "created_at", "updated_at")
		if event["timestamp"] != read.body["updated_at"] {
			t.Errorf("event timestamp %v, want updated_at %v", event["timestamp"], read.body["updated_at"])
		}

		if _, err := s.App.Webhooks.Test(t.Context(), s.MerchantID, endpoint.ID); err != nil {
			t.Fatal(err)
		}
		test := receive(t, bodies)
		checkTimes(t, "test event", test, "timestamp")
		if test["timestamp"] != payment.FormatTime(clock.Now()) {
			t.Errorf("test event timestamp %v, want %s", test["timestamp"], payment.FormatTime(clock.Now()))
		}
	})
}

func checkTimes(t *testing.T, where string, obj map[string]any, names ...string) {
	t.Helper()
	for _, n := range names {
		if v, _ := obj[n].(string); !wireTime.MatchString(v) {
			t.Errorf("%s: %s = %q, want %s", where, n, obj[n], wireTime)
		}
	}
}

func receive(t *testing.T, bodies <-chan []byte) map[string]any {
	t.Helper()
	select {
	case b := <-bodies:
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("webhook body: %v: %s", err, b)
		}
		return m
	case <-time.After(15 * time.Second):
		t.Fatal("no webhook within 15 s")
		return nil
	}
}
