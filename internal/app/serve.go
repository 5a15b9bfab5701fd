package app

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/momopay/momopay/internal/api"
	"github.com/momopay/momopay/internal/payment"
)

// minPendingTTL keeps a demo's PENDING window long enough for the first
// poll (payment.FirstPollDelay) and a payer's answer by hand.
const minPendingTTL = time.Second

func (c *cli) serve(ctx context.Context, args []string) error {
	fs := c.newFlags("serve")
	db := dbFlag(fs)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address HOST:PORT; \":8080\" or \"0.0.0.0:8080\" listens on all interfaces (env MOMOPAY_ADDR)")
	mode := fs.String("mode", ModeSandbox, "sandbox (simulated operators) or live (env MOMOPAY_MODE)")
	ttl := fs.Duration("pending-ttl", payment.DefaultPendingTTL, fmt.Sprintf("sandbox only: how long a payment may stay PENDING, %s to %s, e.g. 30s (env MOMOPAY_PENDING_TTL)", minPendingTTL, payment.DefaultPendingTTL))
	rateLimit := fs.Float64("rate-limit", api.DefaultRateLimit.PerSecond, "requests per second allowed per API key; 0 turns the limit off (env MOMOPAY_RATE_LIMIT)")
	rateBurst := fs.Int("rate-burst", api.DefaultRateLimit.Burst, "requests an API key may send at once above the rate (env MOMOPAY_RATE_BURST)")
	if err := c.parseNone(fs, args); err != nil {
		return err
	}
	// Set on the command line or, through parse, from MOMOPAY_PENDING_TTL.
	ttlSet := false
	fs.Visit(func(f *flag.Flag) { ttlSet = ttlSet || f.Name == "pending-ttl" })
	switch {
	case *mode != ModeSandbox && *mode != ModeLive:
		return fmt.Errorf("serve: --mode %q is not a mode: use sandbox or live (env MOMOPAY_MODE)", *mode)
	case ttlSet && *mode != ModeSandbox:
		return fmt.Errorf("serve: --pending-ttl (MOMOPAY_PENDING_TTL) is for sandbox mode only: live payments stay PENDING %s", payment.DefaultPendingTTL)
	case *ttl < minPendingTTL || *ttl > payment.DefaultPendingTTL:
		return fmt.Errorf("serve: --pending-ttl %s is out of range: give a duration from %s to %s, e.g. 30s (env MOMOPAY_PENDING_TTL)", *ttl, minPendingTTL, payment.DefaultPendingTTL)
	case *rateLimit < 0 || math.IsNaN(*rateLimit) || math.IsInf(*rateLimit, 0):
		return fmt.Errorf("serve: --rate-limit %v is out of range: give requests per second per API key, 0 or more; 0 turns the limit off (env MOMOPAY_RATE_LIMIT)", *rateLimit)
	case *rateBurst < 0 || (*rateLimit > 0 && *rateBurst < 1):
		return fmt.Errorf("serve: --rate-burst %d is out of range: give at least 1 while --rate-limit is on (env MOMOPAY_RATE_BURST)", *rateBurst)
	}
	// Listen first: a port in use is refused before a database is created.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("serve: cannot listen on %s: %w (pass another --addr, or stop what holds the port)", *addr, err)
	}
	logger := slog.New(slog.NewTextHandler(c.stderr, nil))
	a, err := Open(ctx, Config{
		DatabaseURL: *db, Mode: *mode, PendingTTL: *ttl,
		RateLimit: api.RateLimit{PerSecond: *rateLimit, Burst: *rateBurst}, Logger: logger,
		SessionSecret: []byte(c.getenv("MOMOPAY_SESSION_SECRET")),
	})
	if err != nil {
		ln.Close()
		return err
	}
	defer a.Close()
	if warning := looseFileMode(*db); warning != "" {
		logger.Warn(warning)
	}
	url, everywhere := browsableURL(ln.Addr())
	if err := c.seedDemo(ctx, a, url); err != nil {
		ln.Close()
		return err
	}
	attrs := []any{"url", url, "mode", *mode, "database", a.DB.Dialect, "version", Version}
	if everywhere {
		attrs = append(attrs, "listening_on", "all interfaces, port "+strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	}
	logger.Info("momopay listening", attrs...)
	return a.Serve(ctx, ln)
}

// browsableURL is a URL a person on this machine can open for the listen
// address: a wildcard address (":8080", "0.0.0.0", "::") is not one, so
// it gives the loopback address and reports that the server listens on
// every interface.
func browsableURL(addr net.Addr) (url string, everywhere bool) {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return "http://" + addr.String(), false
	}
	host := tcp.IP.String()
	if len(tcp.IP) == 0 || tcp.IP.IsUnspecified() {
		host, everywhere = "127.0.0.1", true
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(tcp.Port)), everywhere
}

// seedDemo gives a brand-new sandbox database a merchant to try the API
// with, and prints its credentials once: they are stored only as hashes.
// A live database gets no demo merchant: its key would take real money.
func (c *cli) seedDemo(ctx context.Context, a *App, baseURL string) error {
	if a.cfg.Mode != ModeSandbox {
		return nil
	}
	n, err := a.Merchants.Count(ctx)
	if err != nil || n > 0 {
		return err
	}
	password := rand.Text()
	m, err := a.Merchants.Create(ctx, "Demo Merchant", "demo@momopay.local", password, time.Now())
	if err != nil {
		return err
	}
	_, key, err := a.APIKeys.Create(ctx, m.ID, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, `
First start: created a demo merchant. This is shown once; keep it.
  merchant id: %s
  login:       %s
  password:    %s
  API key:     %s

Try it:
  curl -s %s/v1/transactions \
    -H 'Authorization: Bearer %s' \
    -H 'Content-Type: application/json' \
    -d '{"reference":"order-1","amount":1500,"currency":"XAF","operator":"AIRTEL","phone_number":"+23560000001","description":"Demo order"}'

`, m.ID, m.Email, password, key, baseURL, key)
	return nil
}

// looseFileMode warns about a SQLite file that others may read: one made
// before momopay created its files 0600 still holds webhook secrets.
func looseFileMode(dbURL string) string {
	path, missing := describeDatabase(dbURL)
	if missing || !filepath.IsAbs(path) {
		return "" // not a SQLite file
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm()&0o077 == 0 {
		return ""
	}
	return fmt.Sprintf("the database file %s has mode %v: others on this machine can read its webhook secrets; run: chmod 600 %s*", path, st.Mode().Perm(), shellQuote(path))
}
