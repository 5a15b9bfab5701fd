package app

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"

	"github.com/momopay/momopay/internal/api"
	"github.com/momopay/momopay/internal/dashboard"
	"github.com/momopay/momopay/internal/jobs"
	"github.com/momopay/momopay/internal/operator"
	"github.com/momopay/momopay/internal/operator/sandbox"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/store"
	"github.com/momopay/momopay/internal/webhook"
)

// Modes of operation (DESIGN.md §4).
const (
	ModeSandbox = "sandbox"
	ModeLive    = "live"
)

// Config is everything that varies between deployments and tests.
type Config struct {
	DatabaseURL string
	Mode        string
	// PendingTTL is the PENDING window; only sandbox mode may shorten it.
	PendingTTL time.Duration
	// JobPollInterval bounds how late a due background job starts.
	JobPollInterval time.Duration
	RateLimit       api.RateLimit
	// ExistingDatabase refuses to create a database: administrative
	// commands must not leave an empty momopay.db in whatever folder they
	// ran in, nor set up a schema that serve or migrate should have.
	ExistingDatabase bool
	Now              func() time.Time
	Logger           *slog.Logger
	// SessionSecret signs dashboard sessions; live mode requires one of at
	// least 32 bytes (MOMOPAY_SESSION_SECRET), sandbox mode draws one and
	// keeps it in the database.
	SessionSecret []byte
}

func (c *Config) defaults() error {
	if c.Mode == "" {
		c.Mode = ModeSandbox
	}
	if c.Mode != ModeSandbox && c.Mode != ModeLive {
		return fmt.Errorf("unknown mode %q: use sandbox or live", c.Mode)
	}
	if c.Mode == ModeLive && len(c.SessionSecret) < dashboard.MinSecretBytes {
		return fmt.Errorf("live mode needs MOMOPAY_SESSION_SECRET: set it to a random secret of at least %d bytes (e.g. openssl rand -base64 48)", dashboard.MinSecretBytes)
	}
	if c.Mode == ModeLive {
		// The Airtel and Moov adapters are not built yet; refusing to start
		// beats taking real merchants' payments through a simulator.
		return errors.New("live mode needs the Airtel and Moov adapters, which this build does not have yet")
	}
	if c.PendingTTL == 0 {
		c.PendingTTL = payment.DefaultPendingTTL
	}
	if c.PendingTTL < time.Second || c.PendingTTL > payment.DefaultPendingTTL {
		return fmt.Errorf("pending TTL must be between 1s and %s", payment.DefaultPendingTTL)
	}
	if c.JobPollInterval == 0 {
		c.JobPollInterval = time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// App is a wired momopay: stores, services, jobs and the HTTP handler.
type App struct {
	cfg          Config
	DB           *store.DB
	Jobs         *river.Client[*sql.Tx]
	Merchants    *store.Merchants
	APIKeys      *store.APIKeys
	Transactions *store.Transactions
	Cases        *store.ReconciliationCases
	Payments     *payment.Service
	Webhooks     *webhook.Service
	Users        *store.Users
	Sessions     *store.Sessions
	AuditLog     *store.AuditLog
	Dashboard    *dashboard.Dashboard
	Handler      http.Handler
	// Schema says which migrations Open applied.
	Schema store.Migrations
	// SandboxCallbackSecret signs the simulated operators' callbacks; tests
	// use it to play an operator.
	SandboxCallbackSecret []byte

	// callbackBase is this process's /callbacks/ URL once it serves.
	callbackBase atomic.Value
	// sweeper takes up, while serving, what a killed process's jobs held.
	sweeper *jobs.Sweeper
}

// Open connects to the database, applies migrations and wires everything.
// Nothing runs in the background until Serve.
func Open(ctx context.Context, cfg Config) (*App, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	db, err := openDatabase(ctx, cfg)
	if err != nil {
		return nil, err
	}
	a := &App{cfg: cfg, DB: db}
	if err := a.wire(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return a, nil
}

func (a *App) wire(ctx context.Context) error {
	cfg, db := a.cfg, a.DB
	var err error
	if a.Schema, err = db.ApplyMigrations(ctx); err != nil {
		return err
	}
	sqlite := db.Dialect == store.SQLite
	if err := jobs.Migrate(ctx, db.DB, sqlite); err != nil {
		return fmt.Errorf("migrate jobs: %w", err)
	}
	handlers := &jobs.Handlers{}
	// Webhook attempts mostly wait on receivers (up to 10 s each), so many
	// workers keep dead endpoints from starving the others; River fetches
	// at most this many per 100 ms, which bounds a burst's drain rate
	// (about 1,000 events/s, BenchmarkDrainBurst in internal/webhook).
	client, err := jobs.NewClient(db.DB, sqlite, handlers, jobs.Config{
		PollInterval: cfg.JobPollInterval, WebhookWorkers: 100, Logger: quiet(cfg.Logger),
	})
	if err != nil {
		return err
	}
	a.Jobs = client
	a.Merchants = store.NewMerchants(db)
	a.APIKeys = store.NewAPIKeys(db)
	a.Transactions = store.NewTransactions(db, client)
	a.Cases = store.NewReconciliationCases(db)
	a.Webhooks = webhook.NewService(webhook.Config{
		DB: db, Jobs: client, Live: cfg.Mode == ModeLive, Now: cfg.Now, Logger: cfg.Logger,
	})
	// The outbox: deliveries and their jobs commit with the state change.
	a.Transactions.OnSettled = a.Webhooks.Enqueue
	handlers.Deliveries = a.Webhooks

	operators, callbacks := a.sandboxOperators()
	a.Payments = payment.NewService(a.Transactions, operators, cfg.Now, cfg.PendingTTL, cfg.Logger)
	handlers.Payments = a.Payments
	a.sweeper = &jobs.Sweeper{OverduePayments: a.Transactions.Overdue, OverdueDeliveries: a.Webhooks.Overdue,
		Handlers: handlers, Now: cfg.Now, Logger: cfg.Logger}

	if err := a.wireDashboard(ctx); err != nil {
		return err
	}
	a.Handler = api.NewServer(api.Config{
		Payments: a.Payments, Keys: a.APIKeys, Callbacks: callbacks, RateLimit: cfg.RateLimit, Now: cfg.Now, Logger: cfg.Logger,
		Mount: a.Dashboard.Register,
	}).Handler()
	return nil
}

// sandboxOperators builds the simulated AIRTEL and MOOV, each behind its
// circuit breaker, and the readers of their callbacks. They call this
// process back over HTTP once it serves, signing with a secret drawn per
// process: in a sandbox with several instances, a callback reaching another
// one is refused and polling settles the payment, as with a lost callback.
func (a *App) sandboxOperators() (map[payment.Operator]operator.Operator, map[payment.Operator]operator.CallbackReader) {
	a.callbackBase.Store("")
	cb := sandbox.Callbacks{
		Secret: []byte(rand.Text()), Client: &http.Client{Timeout: 10 * time.Second},
		URL: func() string { return a.callbackBase.Load().(string) },
	}
	a.SandboxCallbackSecret = cb.Secret
	operators := map[payment.Operator]operator.Operator{}
	callbacks := map[payment.Operator]operator.CallbackReader{}
	// One circuit per merchant: the sandbox's outages are one merchant's
	// test number, and must not refuse every other merchant's pushes.
	breaker := operator.DefaultBreakerSettings
	breaker.PerMerchant = true
	for _, code := range payment.Operators {
		sb := sandbox.New(string(code), a.cfg.Now, cb, a.cfg.Logger)
		operators[code] = operator.WithBreaker(string(code), sb, breaker)
		callbacks[code] = sb
	}
	return operators, callbacks
}

// quiet keeps River's own info chatter out of the service log.
func quiet(l *slog.Logger) *slog.Logger {
	return slog.New(leveled{l.Handler(), slog.LevelWarn})
}

type leveled struct {
	slog.Handler
	min slog.Level
}

func (h leveled) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

// Close releases the database.
func (a *App) Close() error { return a.DB.Close() }

// Serve runs the HTTP server on ln and the background workers until ctx
// ends, then drains both.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	if err := a.Jobs.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("start jobs: %w", err)
	}
	stopSweep := a.sweeper.Start(ctx)
	a.callbackBase.Store("http://" + ln.Addr().String() + "/callbacks/")
	defer a.callbackBase.Store("")
	srv := &http.Server{
		Handler:           a.Handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	srv.Shutdown(shutdown)
	stopSweep()
	a.Jobs.Stop(shutdown)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
