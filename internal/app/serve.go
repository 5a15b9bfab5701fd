package app

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"
	"time"
)

func (c *cli) serve(ctx context.Context, args []string) error {
	fs, db, _ := c.flags("serve")
	addr := fs.String("addr", or(c.getenv("MOMOPAY_ADDR"), "127.0.0.1:8080"), "listen address (env MOMOPAY_ADDR)")
	mode := fs.String("mode", or(c.getenv("MOMOPAY_MODE"), ModeSandbox), "sandbox or live (env MOMOPAY_MODE)")
	ttl := fs.Duration("pending-ttl", 0, "sandbox only: how long a payment may stay PENDING (default 5m)")
	if err := parseNone(fs, args); err != nil {
		return err
	}
	if *ttl != 0 && *mode != ModeSandbox {
		return fmt.Errorf("--pending-ttl is for sandbox mode only: live payments stay PENDING 5 minutes")
	}
	logger := slog.New(slog.NewTextHandler(c.stderr, nil))
	a, err := Open(ctx, Config{DatabaseURL: *db, Mode: *mode, PendingTTL: *ttl, RateLimit: defaultRateLimit, Logger: logger})
	if err != nil {
		return err
	}
	defer a.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	if err := c.seedDemo(ctx, a, "http://"+ln.Addr().String()); err != nil {
		ln.Close()
		return err
	}
	logger.Info("momopay listening", "url", "http://"+ln.Addr().String(), "mode", *mode, "database", a.DB.Dialect, "version", Version)
	return a.Serve(ctx, ln)
}

// seedDemo gives a brand-new database a merchant to try the API with, and
// prints its credentials once: they are stored only as hashes.
func (c *cli) seedDemo(ctx context.Context, a *App, baseURL string) error {
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
