package webhook_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/testlog"
	"github.com/momopay/momopay/internal/webhook"
)

// TestReceiverRefusalsLogAtInfo: an attempt a receiver refuses is the
// merchant's receiver at fault, not the service, and is in the
// delivery's history for the merchant to see: it is logged at INFO, like
// an API request refused with a 4xx. At WARN it wrote a line per failed
// attempt of every broken receiver (about 4 GB a day for one receiver
// failing 48 events a second, in a soak test), burying the lines an
// operator must act on.
func TestReceiverRefusalsLogAtInfo(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		rc := newReceiver(t, statuses(http.StatusInternalServerError))
		f.endpoint(t, f.merchant, rc)
		f.settle(t, f.merchant, payment.StatusSuccess)
		var logged testlog.Buffer
		s := webhook.NewService(webhook.Config{DB: f.app.DB, Now: f.clock.Now, Logger: slog.New(slog.NewJSONHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		a, err := s.Resend(context.Background(), f.merchant, f.onlyDelivery(t, f.merchant).ID)
		if err != nil || a.Succeeded || a.StatusCode != http.StatusInternalServerError {
			t.Fatalf("the attempt: %+v, %v", a, err)
		}
		found := false
		for _, line := range strings.Split(strings.TrimSpace(logged.String()), "\n") {
			var l struct {
				Level, Msg string
				StatusCode int `json:"status_code"`
			}
			if err := json.Unmarshal([]byte(line), &l); err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			if l.Msg == "webhook attempt failed" {
				found = true
				if l.Level != "INFO" || l.StatusCode != http.StatusInternalServerError {
					t.Errorf("the refused attempt is logged at %s with status %d, want INFO and 500", l.Level, l.StatusCode)
				}
			}
		}
		if !found {
			t.Errorf("no line for the refused attempt in:\n%s", logged.String())
		}
	})
}
