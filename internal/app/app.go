package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/momopay/momopay/internal/api"
	"github.com/momopay/momopay/internal/dashboard"
	"github.com/momopay/momopay/internal/jobs"
	"github.com/momopay/momopay/internal/metrics"
	"github.com/momopay/momopay/internal/operator"
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
	// RedisURL, when set, counts RateLimit and the throttles of failed
	// authentications in Redis, across instances.
	RedisURL string
	// ShutdownGrace is how long Serve lets requests and running jobs
	// finish once asked to stop (DefaultShutdownGrace when 0).
	ShutdownGrace time.Duration
	// ExistingDatabase refuses to create a database: administrative
	// commands must not leave an empty momopay.db in whatever folder they
	// ran in, nor set up a schema that serve or migrate should have.
	ExistingDatabase bool
	// Getenv reads the operators' credentials in live mode (operators.go).
	Getenv func(string) string
	// RequireOperator refuses live mode without any operator configured
	// (serve sets it; administrative commands need none).
	RequireOperator bool
	Now             func() time.Time
	Logger          *slog.Logger
	// MetricsRefresh is how long the database readings behind the metrics
	// are reused between scrapes (default 10 s); tests shorten it.
	MetricsRefresh time.Duration
	// SessionSecret signs dashboard sessions; live mode requires one of at
	// least 32 bytes (MOMOPAY_SESSION_SECRET), sandbox mode draws one and
	// keeps it in the database.
	SessionSecret []byte
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client (--trusted-proxies); none by default.
	TrustedProxies []netip.Prefix
	// Listeners are the addresses serve listens on, which webhook
	// deliveries must never reach.
	Listeners []netip.AddrPort
}

func (c *Config) defaults() error {
	if c.Mode == "" {
		c.Mode = ModeSandbox
	}
	if c.Mode != ModeSandbox && c.Mode != ModeLive {
		return fmt.Errorf("unknown mode %q: use sandbox or live", c.Mode)
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
	if c.Getenv == nil {
		c.Getenv = func(string) string { return "" }
	}
	if c.Mode == ModeLive {
		return c.liveProblems()
	}
	return nil
}

// liveProblems names everything serving in live mode lacks at once (the
// commands that serve, or check a configuration for serving, set
// RequireOperator): the dashboard's session secret and the operators'
// variables (checked by building the adapters, which sends nothing to an
// operator). An administrative command needs neither: it signs no session
// and pushes no payment.
func (c *Config) liveProblems() error {
	if !c.RequireOperator {
		return nil
	}
	var problems []error
	if len(c.SessionSecret) < dashboard.MinSecretBytes {
		problems = append(problems, fmt.Errorf("live mode needs MOMOPAY_SESSION_SECRET: set it to a random secret of at least %d bytes (e.g. openssl rand -base64 48)", dashboard.MinSecretBytes))
	}
	probe := *c
	probe.Logger = slog.New(slog.DiscardHandler) // wire logs its warnings once
	if set, err := (&App{cfg: probe}).liveOperators(); err != nil {
		if each, ok := err.(interface{ Unwrap() []error }); ok {
			problems = append(problems, each.Unwrap()...) // one problem each
		} else {
			problems = append(problems, err)
		}
	} else {
		set.close()
	}
	// Joined, not run together: config check lists each as a problem.
	return errors.Join(problems...)
}

// App is a wired momopay: stores, services, jobs and the HTTP handler.
type App struct {
	cfg          Config
	DB           *store.DB
	Jobs         *jobs.Client
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
	// dispatcher makes the webhook attempts while serving.
	dispatcher *webhook.Dispatcher
	// Metrics are served on the admin listener (adminserver.go); breakers
	// are the operators' circuit breakers they report on, and jobsRunning
	// tells /readyz that Serve runs the job client.
	Metrics     *metrics.Metrics
	breakers    map[string]operator.Operator
	jobsRunning atomic.Bool
	// redis counts rate limits and throttles when Config.RedisURL is set.
	redis *redis.Client
	// ops are the operator adapters (and sandbox simulators) in use.
	ops *operatorSet
	// Refunds records refunds and the merchants' auto-refund policy.
	Refunds *store.Refunds
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
		a.Close()
		return nil, err
	}
	return a, nil
}

func (a *App) wire(ctx context.Context) error {
	cfg, db := a.cfg, a.DB
	a.Metrics = metrics.New()
	// On SQLite the one writer and the readers are separate pools.
	if r := db.Reader(); r != db.DB {
		a.Metrics.ObservePool("writer", db.DB)
		a.Metrics.ObservePool("readers", r)
	} else {
		a.Metrics.ObservePgxPool("main", db.Pool())
	}
	var err error
	unlock, err := db.LockSchema(ctx) // instances starting together migrate one at a time
	if err != nil {
		return err
	}
	defer unlock()
	if a.Schema, err = db.ApplyMigrations(ctx); err != nil {
		return err
	}
	if a.Schema.Newer() {
		cfg.Logger.Warn(a.Schema.NewerWarning())
	}
	if err := db.CheckMode(ctx, cfg.Mode == ModeLive); err != nil {
		return err
	}
	sqlite := db.Dialect == store.SQLite
	if err := jobs.Migrate(ctx, db.DB, sqlite); err != nil {
		return fmt.Errorf("migrate jobs: %w", err)
	}
	handlers := &jobs.Handlers{}
	var pg *jobs.Postgres
	if !sqlite {
		pool, err := db.OpenPool(ctx, jobs.WorkerPoolSize)
		if err != nil {
			return err
		}
		defer func() {
			if a.Jobs == nil {
				pool.Close()
			}
		}()
		a.Metrics.ObservePgxPool("jobs", pool)
		pg = &jobs.Postgres{Pool: pool, ConnOf: db.ConnOf}
	}
	client, err := jobs.NewClient(db.DB, pg, handlers, jobs.Config{
		PollInterval: cfg.JobPollInterval, Logger: quiet(cfg.Logger),
	})
	if err != nil {
		return err
	}
	a.Jobs = client
	a.Merchants = store.NewMerchants(db)
	a.APIKeys = store.NewAPIKeys(db)
	a.Transactions = store.NewTransactions(db, client)
	a.Cases = store.NewReconciliationCases(db)
	if a.ops, err = a.buildOperators(); err != nil {
		return err
	}
	a.Webhooks = webhook.NewService(webhook.Config{
		DB: db, Live: cfg.Mode == ModeLive, Now: cfg.Now, Logger: cfg.Logger,
		ObserveAttempt: a.Metrics.ObserveWebhookAttempt, OwnListeners: append(slices.Clone(cfg.Listeners), a.ops.listeners...),
	})
	// The outbox: deliveries commit with the state change, and the
	// dispatcher, woken once they have, makes their attempts.
	a.Transactions.OnSettled = a.Webhooks.Enqueue
	a.Transactions.AfterQueued = a.Webhooks.Wake
	a.dispatcher = a.Webhooks.NewDispatcher(webhook.DispatchConfig{})

	operators, callbacks := a.observeOperators(a.ops.operators), a.ops.callbacks
	a.Payments = payment.NewService(a.Metrics.Store(a.Transactions), operators, cfg.Now, cfg.PendingTTL, cfg.Logger)
	a.Refunds = store.NewRefunds(db)
	a.Payments.SetRefunds(a.Refunds)
	handlers.Payments = a.Payments
	a.sweeper = &jobs.Sweeper{OverduePayments: a.Transactions.Overdue, Handlers: handlers, Now: cfg.Now, Logger: cfg.Logger}

	limiter, throttles, err := a.counters()
	if err != nil {
		return err
	}
	if err := a.wireDashboard(ctx, throttles); err != nil {
		return err
	}
	a.Handler = api.NewServer(api.Config{
		Payments: a.Metrics.Payments(a.Payments), Keys: a.APIKeys, Callbacks: callbacks, RateLimit: cfg.RateLimit, KeyLimiter: limiter, Throttles: throttles, Now: cfg.Now, Logger: cfg.Logger,
		ObserveRequest: a.Metrics.ObserveRequest,
		Mount:          a.Dashboard.Register, PageNotFound: a.Dashboard.NotFoundPage(), TrustedProxies: cfg.TrustedProxies,
	}).Handler()
	a.registerCollector()
	return nil
}

// observeOperators puts each operator (behind its circuit breaker) under
// the metrics, and keeps the breakers for the breaker-state gauge.
func (a *App) observeOperators(ops map[payment.Operator]operator.Operator) map[payment.Operator]operator.Operator {
	a.breakers = map[string]operator.Operator{}
	observed := map[payment.Operator]operator.Operator{}
	for code, op := range ops {
		a.breakers[string(code)] = op
		observed[code] = a.Metrics.Operator(string(code), op)
	}
	return observed
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

// Close stops the operator simulators and releases the database (and
// Redis).
func (a *App) Close() error {
	a.ops.close()
	if a.Jobs != nil {
		a.Jobs.Close()
	}
	if a.redis != nil {
		a.redis.Close()
	}
	return a.DB.Close()
}

// Serve runs the HTTP server on ln and the background workers until ctx
// ends, then drains both within Config.ShutdownGrace (shutdown.go).
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	if err := a.Jobs.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("start jobs: %w", err)
	}
	a.dispatcher.Start(context.WithoutCancel(ctx))
	a.jobsRunning.Store(true)
	stopSweep := a.sweeper.Start(ctx)
	// Keys are cached while revocations can be heard (PostgreSQL only).
	go a.APIKeys.RunRevocationListener(ctx, a.cfg.Logger)
	a.callbackBase.Store("http://" + ln.Addr().String() + "/callbacks/")
	defer a.callbackBase.Store("")
	// Requests' contexts come from requests, which drain ends before the
	// grace does (api.ErrStopping), so that each is answered.
	requests, endRequests := context.WithCancelCause(context.Background())
	defer endRequests(nil)
	srv := &http.Server{
		Handler:           a.Handler,
		BaseContext:       func(net.Listener) context.Context { return requests },
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		// Above the API's 25 s budget for the database plus the 5 s SQLite
		// busy wait a statement may be in when it runs out (measured up to
		// 29.8 s with the write lock held by another process): a request
		// that waited is answered 503, never cut off.
		WriteTimeout:   40 * time.Second,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 16 << 10,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(api.EnvelopeErrors(limitConns(ln, a.cfg.TrustedProxies))) }()

	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	a.jobsRunning.Store(false) // /readyz: this instance is going away
	a.drain(srv, stopSweep, endRequests)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
