package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/momopay/momopay/internal/jobs"
	"github.com/momopay/momopay/internal/metrics"
	"github.com/momopay/momopay/internal/store"
)

// The admin listener (--admin-addr) serves what only the people running
// momopay may see: Prometheus metrics, liveness and readiness probes, and
// Go's profiler. It is a listener of its own, on loopback by default, so
// none of it is ever reachable through the public address merchants and
// operators call.

// AdminOff is the --admin-addr value that turns the admin listener off.
const AdminOff = "off"

// readyTimeout bounds the database checks of one /readyz.
const readyTimeout = 2 * time.Second

func (a *App) registerCollector() {
	sqlite := a.DB.Dialect == store.SQLite
	a.Metrics.Register(metrics.NewCollector(metrics.Sources{
		Pending:     a.Transactions.PendingCounts,
		Undelivered: a.Webhooks.CountUndelivered,
		Jobs: func(ctx context.Context, now time.Time) ([]jobs.QueueStats, error) {
			stats, err := jobs.Stats(ctx, a.DB.DB, sqlite, now)
			if err != nil {
				return nil, err
			}
			webhooks, err := a.Webhooks.QueueStats(ctx, now)
			return append(stats, webhooks), err
		},
		Breakers: a.breakers,
		Now:      a.cfg.Now,
		Refresh:  a.cfg.MetricsRefresh,
		Logger:   a.cfg.Logger,
	}))
}

// Ready reports why this instance should not be sent traffic, or nil: the
// database answers, its schema is this build's, and Serve runs the job
// client (which polls payments and delivers webhooks).
func (a *App) Ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if err := a.DB.PingContext(ctx); err != nil {
		return fmt.Errorf("database unreachable: %w", err)
	}
	if err := a.DB.SchemaCurrent(ctx); err != nil {
		return fmt.Errorf("migrations not applied: %w", err)
	}
	if !a.jobsRunning.Load() {
		return errors.New("job client not running")
	}
	select {
	case <-a.Jobs.Stopped():
		return errors.New("job client stopped")
	case <-a.dispatcher.Stopped():
		return errors.New("webhook dispatcher stopped")
	default:
	}
	return nil
}

// AdminHandler serves /metrics, /livez, /readyz and /debug/pprof/.
func (a *App) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.Metrics.Handler())
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, r *http.Request) {
		writeProbe(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := a.Ready(r.Context()); err != nil {
			writeProbe(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": err.Error()})
			return
		}
		writeProbe(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	// Registered by hand on this mux: importing net/http/pprof also
	// registers on http.DefaultServeMux, which momopay never serves.
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

func writeProbe(w http.ResponseWriter, status int, body map[string]string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

// ServeAdmin serves AdminHandler on ln until ctx ends.
func (a *App) ServeAdmin(ctx context.Context, ln net.Listener) error {
	return serveAdmin(ctx, ln, a.AdminHandler())
}

// serveAdmin serves h on ln until ctx ends.
func serveAdmin(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		// A CPU profile or trace takes ?seconds=N (30 by default).
		WriteTimeout: 2 * time.Minute,
		IdleTimeout:  2 * time.Minute,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	srv.Shutdown(shutdown)
	return nil
}

// listenAdmin opens the admin listener, or none for "off".
func listenAdmin(addr string) (net.Listener, error) {
	if addr == AdminOff || addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serve: cannot listen on %s for the admin listener: %w (pass another --admin-addr, or --admin-addr off)", addr, err)
	}
	return ln, nil
}

func closeListener(ln net.Listener) {
	if ln != nil {
		ln.Close()
	}
}

// startAdmin serves the admin listener (when there is one) in the
// background from before the database is opened until the returned stop is
// called, after the server has drained: a liveness probe must not restart
// an instance that is migrating a large table, or finishing its requests
// after SIGTERM, and the drain's metrics are worth a scrape. Until ready
// gives it the App's handler, /livez answers 200 and /readyz and the rest
// 503 "starting"; during the drain, /readyz says the job client is not
// running.
func startAdmin(ln net.Listener, log *slog.Logger) (ready func(http.Handler), stop func()) {
	if ln == nil {
		return func(http.Handler) {}, func() {}
	}
	var current atomic.Pointer[http.Handler]
	starting := startingHandler()
	current.Store(&starting)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*current.Load()).ServeHTTP(w, r) })
		if err := serveAdmin(ctx, ln, h); err != nil {
			log.Error("admin listener stopped", "err", err)
		}
	}()
	log.Info("admin listening", "url", "http://"+ln.Addr().String(), "serves", "/metrics /livez /readyz /debug/pprof/")
	return func(h http.Handler) { current.Store(&h) }, func() { cancel(); <-done }
}

// startingHandler is the admin listener's while the database is opened and
// migrated: alive, not ready.
func startingHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, r *http.Request) {
		writeProbe(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeProbe(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable",
			"reason": "starting: opening the database and applying migrations"})
	})
	return mux
}
