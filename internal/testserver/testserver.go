// Package testserver starts the whole momopay program in-process on a
// loopback port, on SQLite or PostgreSQL, for tests that must go through the
// real HTTP interface (the api tests, the client SDK's tests). It is for
// tests only.
package testserver

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/api"
	"github.com/momopay/momopay/internal/app"
	"github.com/momopay/momopay/internal/testdb"
)

// Engines lists the database engines a server can run on.
var Engines = testdb.Engines

// Options tune a test server.
type Options struct {
	// DB is "sqlite" (default) or "postgres".
	DB string
	// DatabaseURL reuses an existing database instead of a fresh one, to
	// restart a server on the same data.
	DatabaseURL string
	// PendingTTL shortens the PENDING window (default 5 minutes).
	PendingTTL time.Duration
	// RateLimit per merchant; the zero value disables limiting.
	RateLimit api.RateLimit
	// Now injects the clock.
	Now func() time.Time
	// Verbose sends the server's log to stderr (MOMOPAY_TEST_LOG=1 also).
	Verbose bool
	// Log, when set, receives the server's log as serve writes it (JSON),
	// at every level, debug included.
	Log io.Writer
	// Admin also serves the admin listener (metrics, probes, pprof) on
	// another loopback port, at AdminURL.
	Admin bool
	// TrustedProxies are the reverse proxies whose X-Forwarded-For is
	// believed (serve's --trusted-proxies).
	TrustedProxies []netip.Prefix
}

// Server is a running momopay with one merchant and one API key.
type Server struct {
	URL         string
	AdminURL    string
	DatabaseURL string
	MerchantID  string
	APIKey      string
	App         *app.App

	stop     context.CancelFunc
	done     chan error
	stopOnce sync.Once
}

// Start runs momopay for t; it stops at t's cleanup.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	dbURL := opts.DatabaseURL
	if dbURL == "" {
		dbURL = testdb.URL(t, opts.DB)
	}
	var logOut io.Writer = io.Discard
	if opts.Verbose || os.Getenv("MOMOPAY_TEST_LOG") == "1" {
		logOut = os.Stderr
	}
	logger := slog.New(slog.NewTextHandler(logOut, nil))
	if opts.Log != nil {
		var err error
		if logger, err = app.NewLogger(opts.Log, app.LogJSON, "debug"); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.Open(ctx, app.Config{
		DatabaseURL:     dbURL,
		PendingTTL:      opts.PendingTTL,
		JobPollInterval: 50 * time.Millisecond,
		RateLimit:       opts.RateLimit,
		TrustedProxies:  opts.TrustedProxies,
		Now:             opts.Now,
		Logger:          logger,
		// Every scrape reads the database afresh.
		MetricsRefresh: time.Nanosecond,
	})
	if err != nil {
		cancel()
		t.Fatalf("open momopay: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), DatabaseURL: dbURL, App: a, stop: cancel, done: make(chan error, 1)}
	if opts.Admin {
		adminLn, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		s.AdminURL = "http://" + adminLn.Addr().String()
		adminDone := make(chan struct{})
		go func() { defer close(adminDone); a.ServeAdmin(ctx, adminLn) }()
		t.Cleanup(func() { s.Stop(); <-adminDone })
	}
	go func() { s.done <- a.Serve(ctx, ln) }()
	t.Cleanup(s.Stop)
	s.MerchantID, s.APIKey = s.NewMerchant(t)
	waitHealthy(t, s.URL)
	return s
}

// Stop shuts the server down and closes its database; it is idempotent.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		s.stop()
		<-s.done
		s.App.Close()
	})
}

// NewMerchant creates another merchant with a fresh API key.
func (s *Server) NewMerchant(t testing.TB) (merchantID, apiKey string) {
	t.Helper()
	ctx := context.Background()
	m, err := s.App.Merchants.Create(ctx, "Test Merchant", "m-"+strings.ToLower(rand.Text())+"@example.com", "correct horse battery", time.Now())
	if err != nil {
		t.Fatalf("create merchant: %v", err)
	}
	_, key, err := s.App.APIKeys.Create(ctx, m.ID, time.Now())
	if err != nil {
		t.Fatalf("create API key: %v", err)
	}
	return m.ID, key
}

func waitHealthy(t testing.TB, base string) {
	t.Helper()
	for range 100 {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("momopay at %s never became healthy", base)
}
