package metrics

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/momopay/momopay/internal/jobs"
	"github.com/momopay/momopay/internal/operator"
)

// Sources are what the scrape-time collector reads. Each database query is
// cheap: it reads an index of the rows still in play (PENDING payments,
// unfinished jobs), except Undelivered (see webhook.CountUndelivered),
// which is why results are kept for Refresh.
type Sources struct {
	// Pending counts PENDING payments and those past expires_at.
	Pending func(ctx context.Context, now time.Time) (pending, overdue int64, err error)
	// Undelivered counts webhook deliveries waiting for a person.
	Undelivered func(ctx context.Context) (int64, error)
	// Jobs reads the job queues.
	Jobs func(ctx context.Context, now time.Time) ([]jobs.QueueStats, error)
	// Breakers are the operators wrapped in circuit breakers, by code.
	Breakers map[string]operator.Operator
	// Now is the service's clock (expires_at is written with it).
	Now func() time.Time
	// Refresh is how long database readings are reused: several
	// Prometheus servers scraping every few seconds cost one set of
	// queries per Refresh. Default 10 s.
	Refresh time.Duration
	Logger  *slog.Logger
}

var (
	descPending = prometheus.NewDesc(namespace+"_payments_pending",
		"Payments PENDING now, across all merchants.", nil, nil)
	descOverdue = prometheus.NewDesc(namespace+"_payments_pending_overdue",
		"Payments still PENDING more than 30 s after their expires_at: the expiry check should have ended each by then.", nil, nil)
	descUndelivered = prometheus.NewDesc(namespace+"_webhook_deliveries_undelivered",
		"Webhook deliveries undelivered (attempts spent or endpoint disabled), waiting for a person to re-send them.", nil, nil)
	descJobs = prometheus.NewDesc(namespace+"_jobs",
		"Unfinished background jobs, by queue and state (available, running, retryable, scheduled).", []string{"queue", "state"}, nil)
	descOldestDue = prometheus.NewDesc(namespace+"_jobs_oldest_due_age_seconds",
		"How long the oldest due job of a queue has waited to start; 0 when none waits.", []string{"queue"}, nil)
	descDatabaseUp = prometheus.NewDesc(namespace+"_database_up",
		"1 when the last database reading for these metrics succeeded, 0 when it failed.", nil, nil)
	descBreakerState = prometheus.NewDesc(namespace+"_operator_breaker_state",
		"Circuit breaker state of an operator's pushes: 0 closed, 1 half-open, 2 open (the worst of its circuits).", []string{"operator"}, nil)
	descBreakerOpen = prometheus.NewDesc(namespace+"_operator_breaker_open_circuits",
		"Open circuits of an operator: 0 or 1 with one circuit per operator; per merchant in the sandbox.", []string{"operator"}, nil)
)

// reading is one set of database-derived values.
type reading struct {
	at               time.Time
	ok               bool
	pending, overdue int64
	undelivered      int64
	queues           []jobs.QueueStats
}

type collector struct {
	src Sources

	mu   sync.Mutex
	last reading
	// reads lets scrapes that come while the database is being read share
	// that reading, failed or not: each would otherwise wait for the one
	// before it and then take its own readTimeout, so two Prometheus
	// servers scraping while the database hangs took twice as long.
	reads singleflight.Group
}

// readTimeout bounds one reading of the database.
const readTimeout = 5 * time.Second

// NewCollector returns the collector reading src when scraped.
func NewCollector(src Sources) prometheus.Collector {
	if src.Refresh <= 0 {
		src.Refresh = 10 * time.Second
	}
	if src.Now == nil {
		src.Now = time.Now
	}
	if src.Logger == nil {
		src.Logger = slog.Default()
	}
	return &collector{src: src}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPending, descOverdue, descUndelivered, descJobs, descOldestDue,
		descDatabaseUp, descBreakerState, descBreakerOpen} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	r := c.read()
	up := 0.0
	if r.ok {
		up = 1
		ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, float64(r.pending))
		ch <- prometheus.MustNewConstMetric(descOverdue, prometheus.GaugeValue, float64(r.overdue))
		ch <- prometheus.MustNewConstMetric(descUndelivered, prometheus.GaugeValue, float64(r.undelivered))
		for _, q := range r.queues {
			for state, n := range q.ByState {
				ch <- prometheus.MustNewConstMetric(descJobs, prometheus.GaugeValue, float64(n), q.Queue, state)
			}
			ch <- prometheus.MustNewConstMetric(descOldestDue, prometheus.GaugeValue, q.OldestDue.Seconds(), q.Queue)
		}
	}
	ch <- prometheus.MustNewConstMetric(descDatabaseUp, prometheus.GaugeValue, up)

	names := make([]string, 0, len(c.src.Breakers))
	for name := range c.src.Breakers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		circuits, ok := operator.BreakerCircuits(c.src.Breakers[name])
		if !ok {
			continue
		}
		state := 0.0
		switch {
		case circuits.Open > 0:
			state = 2
		case circuits.HalfOpen > 0:
			state = 1
		}
		ch <- prometheus.MustNewConstMetric(descBreakerState, prometheus.GaugeValue, state, name)
		ch <- prometheus.MustNewConstMetric(descBreakerOpen, prometheus.GaugeValue, float64(circuits.Open), name)
	}
}

// read returns the last reading while it is fresh, or reads the database.
// A failed reading is not kept, so the next scrape tries again.
func (c *collector) read() reading {
	c.mu.Lock()
	last := c.last
	c.mu.Unlock()
	if last.ok && time.Since(last.at) < c.src.Refresh {
		return last
	}
	r, _, _ := c.reads.Do("", func() (any, error) {
		r := c.readDatabase()
		if r.ok {
			c.mu.Lock()
			c.last = r
			c.mu.Unlock()
		}
		return r, nil
	})
	return r.(reading)
}

// readDatabase makes one reading.
func (c *collector) readDatabase() reading {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	r := reading{at: time.Now()}
	var err error
	if r.pending, r.overdue, err = c.src.Pending(ctx, c.src.Now()); err == nil {
		if r.undelivered, err = c.src.Undelivered(ctx); err == nil {
			r.queues, err = c.src.Jobs(ctx, time.Now())
		}
	}
	if err != nil {
		c.src.Logger.Warn("metrics: cannot read the database", "err", err)
		return reading{}
	}
	r.ok = true
	return r
}
