package dashboard_test

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/testserver"
)

// BenchmarkPages100k times the transaction, webhook and reconciliation
// pages through the real server for a merchant with 100,000 transactions
// (seeded as BenchmarkOverview100k does), one sub-benchmark per page, and
// reports the 95th percentile (p95-ms) of each.
//
//	go test -run '^$' -bench BenchmarkPages100k -benchtime 50x ./internal/dashboard
func BenchmarkPages100k(b *testing.B) {
	for _, engine := range testserver.Engines {
		b.Run(engine, func(b *testing.B) {
			s := testserver.Start(b, testserver.Options{DB: engine})
			seedTransactions(b, s, benchN)
			users, _ := s.App.Users.List(b.Context(), s.MerchantID)
			resp, err := http.Post(s.URL+"/auth/login", "application/json",
				strings.NewReader(`{"email":"`+users[0].Email+`","password":"`+password+`"}`))
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			var cookie string
			for _, c := range resp.Cookies() {
				if c.Name == "__Host-momopay_session" {
					cookie = c.Value
				}
			}
			var someID string
			if err := s.App.DB.QueryRow(`SELECT id FROM transactions WHERE merchant_id = $1 ORDER BY created_at DESC LIMIT 1 OFFSET 5000`,
				s.MerchantID).Scan(&someID); err != nil {
				b.Fatal(err)
			}
			for _, page := range []string{
				"/transactions",
				"/transactions?status=SUCCESS&operator=MOOV",
				"/transactions?before=" + someID,
				"/transactions?q=order-77777",
				"/transactions/" + someID,
				"/webhooks",
				"/webhooks/deliveries",
				"/reconciliation",
			} {
				b.Run(strings.NewReplacer("/", "_", "?", "_", "&", "_", "=", "-").Replace(page), func(b *testing.B) {
					get := func() time.Duration {
						req, _ := http.NewRequest("GET", s.URL+page, nil)
						req.AddCookie(&http.Cookie{Name: "__Host-momopay_session", Value: cookie})
						start := time.Now()
						resp, err := http.DefaultClient.Do(req)
						if err != nil {
							b.Fatal(err)
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != http.StatusOK {
							b.Fatalf("%s: %d", page, resp.StatusCode)
						}
						return time.Since(start)
					}
					get()
					times := make([]time.Duration, 0, b.N)
					for b.Loop() {
						times = append(times, get())
					}
					slices.Sort(times)
					b.ReportMetric(float64(times[min(len(times)-1, len(times)*95/100)].Microseconds())/1000, "p95-ms")
					b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
				})
			}
		})
	}
}
