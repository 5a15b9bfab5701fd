package app_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testlog"
	"github.com/momopay/momopay/internal/testserver"
)

// TestAbandonedRequestIsNotAnError: a request whose client went away
// before it was answered is logged as abandoned, at INFO, and recorded as
// 499, not as a 500 "internal error" that would page someone for a
// client's timeout.
func TestAbandonedRequestIsNotAnError(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		var log testlog.Buffer
		s := testserver.Start(t, testserver.Options{DB: engine, Log: &log})
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // the client hung up before the server read its key
		req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/v1/transactions?per_page=5", nil)
		req.Header.Set("Authorization", "Bearer "+s.APIKey)
		rec := httptest.NewRecorder()
		s.App.Handler.ServeHTTP(rec, req)
		if rec.Code != 499 {
			t.Errorf("abandoned request recorded as %d, want 499", rec.Code)
		}
		out := log.String()
		if strings.Contains(out, `"level":"ERROR"`) {
			t.Errorf("an abandoned request was logged as an error:\n%s", out)
		}
		if !strings.Contains(out, "request abandoned by the client") {
			t.Errorf("no line says the request was abandoned:\n%s", out)
		}
	})
}

// TestAbandonedSignInIsNotAnError: a sign-in whose browser went away while
// it waited its turn for a password check (lines and hashing slots make
// sign-ins wait during a flood) is abandoned, 499 at INFO, as in the API:
// closed connections must not count as the dashboard's 500s.
func TestAbandonedSignInIsNotAnError(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		var log testlog.Buffer
		s := testserver.Start(t, testserver.Options{DB: engine, Log: &log})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/auth/login",
			strings.NewReader(`{"email":"someone@example.td","password":"a wrong password"}`))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		s.App.Handler.ServeHTTP(rec, req)
		if rec.Code != 499 {
			t.Errorf("abandoned sign-in recorded as %d, want 499", rec.Code)
		}
		out := log.String()
		if strings.Contains(out, `"level":"ERROR"`) {
			t.Errorf("an abandoned sign-in was logged as an error:\n%s", out)
		}
		if !strings.Contains(out, "request abandoned by the client") {
			t.Errorf("no line says the sign-in was abandoned:\n%s", out)
		}
	})
}
