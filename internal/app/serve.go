package app

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/momopay/momopay/internal/api"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/store"
)

// The listen addresses of serve when neither a flag nor a variable gives
// one; the other commands assume them too (cli.serverListeners).
const (
	defaultAddr      = "127.0.0.1:8080"
	defaultAdminAddr = "127.0.0.1:9090"
)

// minPendingTTL keeps a demo's PENDING window long enough for the first
// poll (payment.FirstPollDelay) and a payer's answer by hand.
const minPendingTTL = time.Second

func (c *cli) serve(ctx context.Context, args []string) error {
	fs := c.newFlags("serve")
	db := dbFlag(fs)
	addr := fs.String("addr", defaultAddr, "listen address HOST:PORT; \":8080\" or \"0.0.0.0:8080\" listens on all interfaces (env MOMOPAY_ADDR)")
	mode := fs.String("mode", ModeSandbox, "sandbox (simulated operators) or live (env MOMOPAY_MODE)")
	ttl := fs.Duration("pending-ttl", payment.DefaultPendingTTL, fmt.Sprintf("sandbox only: how long a payment may stay PENDING, %s to %s, e.g. 30s (env MOMOPAY_PENDING_TTL)", minPendingTTL, payment.DefaultPendingTTL))
	rateLimit := fs.Float64("rate-limit", api.DefaultRateLimit.PerSecond, "requests per second allowed per merchant, all its API keys together; 0 turns the limit off (env MOMOPAY_RATE_LIMIT)")
	rateBurst := fs.Int("rate-burst", api.DefaultRateLimit.Burst, "requests a merchant may send at once above the rate (env MOMOPAY_RATE_BURST)")
	adminAddr := fs.String("admin-addr", defaultAdminAddr, "admin listener for /metrics, /livez, /readyz and /debug/pprof/; keep it private; \"off\" turns it off (env MOMOPAY_ADMIN_ADDR)")
	logFormat := fs.String("log-format", defaultLogFormat(c.stderr), "log format: json or text; the default is text when stderr is a terminal, json otherwise (env MOMOPAY_LOG_FORMAT)")
	logLevel := fs.String("log-level", "info", "least severe log lines written: debug, info, warn or error (env MOMOPAY_LOG_LEVEL)")
	grace := fs.Duration("shutdown-grace", DefaultShutdownGrace, "on SIGTERM or SIGINT, how long requests and running jobs get to finish before jobs are cancelled and handed back (env MOMOPAY_SHUTDOWN_GRACE)")
	trustedProxies := fs.String("trusted-proxies", "", "reverse proxies whose X-Forwarded-For names the client, for the failed sign-in and API key limits and the audit log: addresses or prefixes, comma-separated (\"10.0.0.5,fd00::/8\"); unset, the peer address counts (env MOMOPAY_TRUSTED_PROXIES)")
	redisURL := fs.String("redis-url", "", "redis://[:PASSWORD@]HOST:6379[/DB]: count rate limits and failed sign-ins in Redis, across every instance; unset, each instance counts its own (env MOMOPAY_REDIS_URL)")
	// Every problem at once, variables that do not parse included; the
	// same checks as momopay config check's.
	err := c.parseNone(fs, args)
	if _, bad := errors.AsType[badVariables](err); err != nil && !bad {
		return err
	}
	if err := errors.Join(err, checkSettings(ctx, fs)); err != nil {
		return err
	}
	proxies, _ := api.ParseTrustedProxies(*trustedProxies) // checkTrustedProxies vetted it
	logger, err := NewLogger(c.stderr, *logFormat, *logLevel)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	// Listen first: a port in use is refused before a database is created.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("serve: cannot listen on %s: %w (pass another --addr, or stop what holds the port)", *addr, err)
	}
	adminLn, err := listenAdmin(*adminAddr)
	if err != nil {
		ln.Close()
		return err
	}
	unlock, err := lockSQLiteServe(*db)
	if err != nil {
		ln.Close()
		closeListener(adminLn)
		return err
	}
	defer unlock()
	adminReady, stopAdmin := startAdmin(adminLn, logger)
	a, err := Open(ctx, Config{
		DatabaseURL: *db, Mode: *mode, PendingTTL: *ttl,
		RateLimit: api.RateLimit{PerSecond: *rateLimit, Burst: *rateBurst}, Logger: logger,
		ShutdownGrace: *grace, RedisURL: *redisURL, Getenv: c.getenv, RequireOperator: true,
		SessionSecret:  []byte(c.getenv("MOMOPAY_SESSION_SECRET")),
		TrustedProxies: proxies, Listeners: listening(ln, adminLn),
	})
	if err != nil {
		ln.Close()
		stopAdmin()
		return err
	}
	defer closeWithin(a, logger, closeWait)
	defer stopAdmin() // before closeWithin: the handler reads the App
	adminReady(a.AdminHandler())
	if warning := looseFileMode(*db); warning != "" {
		logger.Warn(warning)
	}
	if a.cfg.Mode == ModeSandbox {
		// Marked before the demo merchant and the first payment, so that
		// live mode never takes this database (store.ErrServedSandbox).
		if err := a.DB.MarkSandbox(ctx); err != nil {
			ln.Close()
			return err
		}
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

// listening returns the addresses of the listeners that are open.
func listening(lns ...net.Listener) []netip.AddrPort {
	var out []netip.AddrPort
	for _, ln := range lns {
		if ln == nil {
			continue
		}
		if ap, err := netip.ParseAddrPort(ln.Addr().String()); err == nil {
			out = append(out, ap)
		}
	}
	return out
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
	m, err := a.Merchants.Create(ctx, "Demo Merchant", store.DemoMerchantEmail, password, time.Now())
	if errors.Is(err, store.ErrEmailTaken) {
		// Instances started together on a new database all counted no
		// merchant; the first to create the demo one prints it, and the
		// others serve it.
		return nil
	}
	if err != nil {
		return err
	}
	_, key, err := a.APIKeys.Create(ctx, m.ID, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, `
First start: created a demo merchant. This is shown once; keep it.
  dashboard:   %s/ (sign in with the login and password below)
  merchant id: %s
  login:       %s
  password:    %s
  API key:     %s

Try it:
  curl -s %s/v1/transactions \
    -H 'Authorization: Bearer %s' \
    -H 'Content-Type: application/json' \
    -d '{"reference":"order-1","amount":1500,"currency":"XAF","operator":"AIRTEL","phone_number":"+23560000001","description":"Demo order"}'

`, baseURL, m.ID, m.Email, password, key, baseURL, key)
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

// closeWait bounds the release of the database and Redis once serve has
// stopped: closing a pool waits for its connections, and a connection to
// a PostgreSQL that hangs (stopped, or its host unreachable without a
// reset) never finishes. The process ends anyway past it; the kernel
// closes its sockets, and nothing is left to write.
const closeWait = 5 * time.Second

// closeWithin closes a, giving up after wait with a warning. The close
// it gave up on is left running: serve returns and the process ends, which
// is what ends it.
func closeWithin(a *App, log *slog.Logger, wait time.Duration) {
	done := make(chan struct{})
	go func() {
		a.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(wait):
		log.Warn("the database connections did not close in time (the database does not answer); exiting without them", "waited", wait.String())
	}
}
