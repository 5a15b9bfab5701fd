package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/momopay/momopay/internal/testserver"
)

// Benchmarks of the three endpoints through the real HTTP server over
// loopback, on both engines:
//
//	go test -run '^$' -bench . -benchmem ./internal/api/
func BenchmarkCreateTransaction(b *testing.B) {
	for _, engine := range testserver.Engines {
		b.Run(engine, func(b *testing.B) {
			s := testserver.Start(b, testserver.Options{DB: engine})
			var n atomic.Int64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					body := fmt.Sprintf(`{"reference":"bench-%d","amount":1000,"currency":"XAF","operator":"AIRTEL","phone_number":"+23566000000"}`, n.Add(1))
					if st := benchCall(b, s, "POST", "/v1/transactions", body); st != http.StatusCreated {
						b.Fatalf("status %d", st)
					}
				}
			})
		})
	}
}

func BenchmarkGetTransaction(b *testing.B) {
	for _, engine := range testserver.Engines {
		b.Run(engine, func(b *testing.B) {
			s := testserver.Start(b, testserver.Options{DB: engine})
			ids := seed(b, s, 1000)
			var n atomic.Int64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if st := benchCall(b, s, "GET", "/v1/transactions/"+ids[n.Add(1)%int64(len(ids))], ""); st != http.StatusOK {
						b.Fatalf("status %d", st)
					}
				}
			})
		})
	}
}

// BenchmarkListFiltered reads a filtered page from 10,000 transactions of
// one merchant (a fifth of them MOOV).
func BenchmarkListFiltered(b *testing.B) {
	for _, engine := range testserver.Engines {
		b.Run(engine, func(b *testing.B) {
			s := testserver.Start(b, testserver.Options{DB: engine})
			seed(b, s, 10000)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if st := benchCall(b, s, "GET", "/v1/transactions?operator=MOOV&status=PENDING&page=3&per_page=50", ""); st != http.StatusOK {
						b.Fatalf("status %d", st)
					}
				}
			})
		})
	}
}

// seed creates n transactions through the service (not HTTP, to keep set-up
// short) and returns their ids.
func seed(b *testing.B, s *testserver.Server, n int) []string {
	b.Helper()
	ids := make([]string, 0, n)
	for i := range n {
		op := "AIRTEL"
		if i%5 == 0 {
			op = "MOOV"
		}
		req := newPaymentRequest(fmt.Sprintf("seed-%d", i), op)
		t, err := s.App.Payments.Initiate(b.Context(), s.MerchantID, req)
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, t.ID)
	}
	return ids
}

func benchCall(b *testing.B, s *testserver.Server, method, path, body string) int {
	req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.APIKey)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	drain(resp)
	return resp.StatusCode
}
