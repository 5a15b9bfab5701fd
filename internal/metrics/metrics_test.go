package metrics_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/momopay/momopay/internal/metrics"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/webhook"
)

// scrape returns what Prometheus reads from m's handler.
func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Result().Body)
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d %s", rec.Code, body)
	}
	return string(body)
}

// TestCountersExistBeforeTheirFirstEvent: the counters whose label values
// are known in advance are served at 0 before anything happened, so that
// rate() and increase() see their first event and alerts have a series to
// read; an operator's series appear when it is wrapped.
func TestCountersExistBeforeTheirFirstEvent(t *testing.T) {
	m := metrics.New()
	want := []string{
		`momopay_webhook_attempts_total{outcome="` + webhook.OutcomeDelivered + `"} 0`,
		`momopay_webhook_attempts_total{outcome="` + webhook.OutcomeHTTPError + `"} 0`,
		`momopay_webhook_attempts_total{outcome="` + webhook.OutcomeTimeout + `"} 0`,
		`momopay_webhook_attempts_total{outcome="` + webhook.OutcomeRefused + `"} 0`,
		`momopay_webhook_attempts_total{outcome="` + webhook.OutcomeNetworkError + `"} 0`,
		`momopay_webhook_attempts_total{outcome="` + webhook.OutcomeInterrupted + `"} 0`,
		`momopay_reconciliation_cases_opened_total{source="` + payment.SourceCallback + `"} 0`,
		`momopay_reconciliation_cases_opened_total{source="` + payment.SourcePoll + `"} 0`,
		`momopay_reconciliation_cases_opened_total{source="` + payment.SourceExpiry + `"} 0`,
		`momopay_reconciliation_cases_opened_total{source="` + payment.SourceSandbox + `"} 0`,
	}
	perOperator := []string{
		`momopay_payments_created_total{operator="AIRTEL"} 0`,
		`momopay_payments_settled_total{operator="AIRTEL",status="SUCCESS"} 0`,
		`momopay_payments_settled_total{operator="AIRTEL",status="FAILED"} 0`,
		`momopay_payments_settled_total{operator="AIRTEL",status="TIMEOUT"} 0`,
		`momopay_payments_settled_total{operator="AIRTEL",status="EXPIRED"} 0`,
	}
	for _, operation := range []string{"request_payment", "payment_status"} {
		for _, outcome := range []string{"ok", "unavailable", "circuit_open", "timeout", "error"} {
			perOperator = append(perOperator, `momopay_operator_requests_total{operation="`+operation+`",operator="AIRTEL",outcome="`+outcome+`"} 0`)
		}
	}
	body := scrape(t, m)
	for _, w := range want {
		if !strings.Contains(body, "\n"+w+"\n") {
			t.Errorf("before any event, /metrics lacks %s", w)
		}
	}
	if strings.Contains(body, `operator="AIRTEL"`) {
		t.Errorf("an operator's series before it is wrapped")
	}

	m.Operator("AIRTEL", nil)
	body = scrape(t, m)
	for _, w := range append(want, perOperator...) {
		if !strings.Contains(body, "\n"+w+"\n") {
			t.Errorf("once AIRTEL is wrapped, /metrics lacks %s", w)
		}
	}
	if n := strings.Count(body, "\nmomopay_operator_requests_total{"); n != 12 {
		t.Errorf("%d operator_requests_total series, want 2 operations × 6 outcomes", n)
	}
}
