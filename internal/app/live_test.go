package app_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/app"
	"github.com/momopay/momopay/internal/operator/airtel/airtelsim"
	"github.com/momopay/momopay/internal/operator/moov"
	"github.com/momopay/momopay/internal/testserver"
)

// TestMain makes the tests trust the fake operators' https (live mode
// reaches operators over https only).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "momopay-app-test")
	if err != nil {
		panic(err)
	}
	if err := testserver.TrustTLSServers(dir); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// liveSessionSecret is the dashboard's session secret live mode needs.
var liveSessionSecret = []byte("a-session-secret-for-the-tests-0123456789")

// quietLog discards what the app logs.
var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// liveClock starts every live-mode test at the same instant.
func liveClock() *testserver.Clock {
	return testserver.NewClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
}

// fakeAirtel serves an Airtel simulator on the clock, through wrap when it
// is not nil (to drop, refuse or alter what a test chooses), and returns it
// with the environment that points live mode at it.
func fakeAirtel(t *testing.T, clk *testserver.Clock, wrap func(sim http.Handler) http.Handler) (*airtelsim.Simulator, map[string]string) {
	t.Helper()
	sim := airtelsim.New(airtelsim.Config{ClientID: "id", ClientSecret: "secret", Now: clk.Now, Logger: quietLog})
	h := sim.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	return sim, map[string]string{"MOMOPAY_AIRTEL_BASE_URL": srv.URL, "MOMOPAY_AIRTEL_CLIENT_ID": "id", "MOMOPAY_AIRTEL_CLIENT_SECRET": "secret"}
}

// fakeMoov is fakeAirtel for Moov.
func fakeMoov(t *testing.T, clk *testserver.Clock, wrap func(sim http.Handler) http.Handler) (*moov.Simulator, map[string]string) {
	t.Helper()
	const user, pass, key = "merchant", "a-moov-password", "0123456789abcdef0123456789abcdef"
	token, err := moov.Token(user, pass, key)
	if err != nil {
		t.Fatal(err)
	}
	sim := moov.NewSimulator(moov.SimulatorConfig{Token: token, Now: clk.Now, Logger: quietLog})
	var h http.Handler = sim
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	return sim, map[string]string{"MOMOPAY_MOOV_URL": srv.URL, "MOMOPAY_MOOV_USERNAME": user, "MOMOPAY_MOOV_PASSWORD": pass, "MOMOPAY_MOOV_KEY": key}
}

// openLive opens momopay in live mode on db with env as its environment,
// closed at the end of the test.
func openLive(t *testing.T, db string, clk *testserver.Clock, env map[string]string) *app.App {
	t.Helper()
	a, err := app.Open(t.Context(), app.Config{DatabaseURL: db, Mode: app.ModeLive, Now: clk.Now, SessionSecret: liveSessionSecret,
		Getenv: func(k string) string { return env[k] }, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// liveMerchant creates the merchant of a live-mode test and returns its id.
func liveMerchant(t *testing.T, a *app.App, clk *testserver.Clock) string {
	t.Helper()
	m, err := a.Merchants.Create(t.Context(), "Live", "live@example.com", "correct horse battery", clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	return m.ID
}

// pollToEnd plays a payment's status polls on the clock, as its job would,
// until polling is over (at most 10 polls).
func pollToEnd(t *testing.T, a *app.App, clk *testserver.Clock, merchantID, id string) {
	t.Helper()
	for range 10 {
		wait, err := a.Payments.Poll(t.Context(), merchantID, id)
		if err != nil || wait == 0 {
			return
		}
		clk.Advance(wait)
	}
}
