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
	checkAbandoned(t, "request", func(ctx context.Context, s *testserver.Server) *http.Request {
		// The client hung up before the server read its key.
		req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/v1/transactions?per_page=5", nil)
		req.Header.Set("Authorization", "Bearer "+s.APIKey)
		return req
	})
}

// TestAbandonedSignInIsNotAnError: a sign-in whose browser went away while
// it waited its turn for a password check (lines and hashing slots make
// sign-ins wait during a flood) is abandoned, 499 at INFO, as in the API:
// closed connections must not count as the dashboard's 500s.
func TestAbandonedSignInIsNotAnError(t *testing.T) {
	checkAbandoned(t, "sign-in", func(ctx context.Context, s *testserver.Server) *http.Request {
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/auth/login",
			strings.NewReader(`{"email":"someone@example.td","password":"a wrong password"}`))
		req.Header.Set("Content-Type", "application/json")
		return req
	})
}

// checkAbandoned serves, on each engine, the request that request makes
// with a context its client has already cancelled, and checks that it is
// recorded as 499 and logged as abandoned at INFO, never as an ERROR.
func checkAbandoned(t *testing.T, what string, request func(context.Context, *testserver.Server) *http.Request) {
	testdb.Each(t, func(t *testing.T, engine string) {
		var log testlog.Buffer
		s := testserver.Start(t, testserver.Options{DB: engine, Log: &log})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		rec := httptest.NewRecorder()
		s.App.Handler.ServeHTTP(rec, request(ctx, s))
		if rec.Code != 499 {
			t.Errorf("abandoned %s recorded as %d, want 499", what, rec.Code)
		}
		out := log.String()
		if strings.Contains(out, `"level":"ERROR"`) {
			t.Errorf("an abandoned %s was logged as an error:\n%s", what, out)
		}
		if !strings.Contains(out, "request abandoned by the client") {
			t.Errorf("no line says the %s was abandoned:\n%s", what, out)
		}
	})
}
