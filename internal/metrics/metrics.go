// Package metrics defines momopay's Prometheus metrics and feeds them from
// the edges of the program: an HTTP observer, decorators around the payment
// store and the operators, the webhook sender's observer, and a collector
// that reads queue depths and backlogs from the database when scraped.
//
// The domain packages never import it (nor Prometheus): they expose small
// hooks, and internal/app wires them here. Every label takes values from a
// small fixed set (route patterns, operator codes, statuses, outcomes),
// never an id, so the number of series stays bounded.
package metrics

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/momopay/momopay/internal/operator"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/webhook"
)

const namespace = "momopay"

// Metrics holds momopay's metrics in a registry of their own (never the
// global one), so tests and several apps in one process do not collide.
type Metrics struct {
	registry *prometheus.Registry

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec

	paymentsCreated *prometheus.CounterVec
	paymentsSettled *prometheus.CounterVec
	settleDuration  *prometheus.HistogramVec
	reconciliation  *prometheus.CounterVec

	operatorCalls    *prometheus.CounterVec
	operatorDuration *prometheus.HistogramVec

	webhookAttempts *prometheus.CounterVec
	webhookDuration *prometheus.HistogramVec
}

// New registers every metric, with Go runtime and process metrics.
func New() *Metrics {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{registry: r}
	f := func(c prometheus.Collector) { r.MustRegister(c) }

	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "http_requests_total",
		Help: "HTTP requests answered on the public listener, by route pattern, method and status.",
	}, []string{"route", "method", "status"})
	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "http_request_duration_seconds",
		Help:    "Time to answer an HTTP request on the public listener, by route pattern and method.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15},
	}, []string{"route", "method"})
	f(m.httpRequests)
	f(m.httpDuration)

	m.paymentsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "payments_created_total",
		Help: "Payments created (their push sent or judged sent) by this process, by operator.",
	}, []string{"operator"})
	m.paymentsSettled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "payments_settled_total",
		Help: "Payments that reached a final status in this process, by operator and status.",
	}, []string{"operator", "status"})
	m.settleDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "payment_settle_duration_seconds",
		Help:    "Time from a payment's creation to its final status, by operator and status.",
		Buckets: []float64{1, 2, 5, 10, 20, 30, 60, 120, 180, 240, 300, 330, 600},
	}, []string{"operator", "status"})
	m.reconciliation = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "reconciliation_cases_opened_total",
		Help: "Late operator outcomes that differ from a payment's final status, recorded for a person to reconcile, by source.",
	}, []string{"source"})
	f(m.paymentsCreated)
	f(m.paymentsSettled)
	f(m.settleDuration)
	f(m.reconciliation)

	m.operatorCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "operator_requests_total",
		Help: "Calls to Mobile Money operators, by operator, operation (request_payment, payment_status) and outcome.",
	}, []string{"operator", "operation", "outcome"})
	m.operatorDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "operator_request_duration_seconds",
		Help:    "Time an operator took to answer, by operator and operation.",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15},
	}, []string{"operator", "operation"})
	f(m.operatorCalls)
	f(m.operatorDuration)

	m.webhookAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "webhook_attempts_total",
		Help: "Webhook POSTs made to merchants' endpoints, by outcome.",
	}, []string{"outcome"})
	m.webhookDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "webhook_attempt_duration_seconds",
		Help:    "Time a merchant's endpoint took to answer a webhook POST, by outcome.",
		Buckets: []float64{.025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15},
	}, []string{"outcome"})
	f(m.webhookAttempts)
	f(m.webhookDuration)
	m.initSeries()
	return m
}

// Label values known in advance. A counter's series is created at zero
// with them, so that it exists before its first event: rate() and
// increase() then see that first event, and an alert on a counter has a
// series to read rather than none.
var (
	finalStatuses   = []payment.Status{payment.StatusSuccess, payment.StatusFailed, payment.StatusTimeout, payment.StatusExpired}
	sources         = []string{payment.SourceCallback, payment.SourcePoll, payment.SourceExpiry, payment.SourceSandbox, payment.SourcePush, payment.SourceLateCheck}
	operations      = []string{opRequestPayment, opPaymentStatus}
	outcomes        = []string{outcomeOK, outcomeDeclined, outcomeUnavailable, outcomeCircuitOpen, outcomeTimeout, outcomeError}
	webhookOutcomes = []string{
		webhook.OutcomeDelivered, webhook.OutcomeHTTPError, webhook.OutcomeTimeout,
		webhook.OutcomeRefused, webhook.OutcomeNetworkError, webhook.OutcomeInterrupted,
	}
)

// initSeries creates at zero the series whose labels do not name an
// operator; Operator creates those of each operator it wraps.
func (m *Metrics) initSeries() {
	for _, outcome := range webhookOutcomes {
		m.webhookAttempts.WithLabelValues(outcome)
	}
	for _, source := range sources {
		m.reconciliation.WithLabelValues(source)
	}
}

// initOperator creates at zero the counters of an operator's payments and
// calls.
func (m *Metrics) initOperator(name string) {
	m.paymentsCreated.WithLabelValues(name)
	for _, status := range finalStatuses {
		m.paymentsSettled.WithLabelValues(name, string(status))
	}
	for _, operation := range operations {
		for _, outcome := range outcomes {
			m.operatorCalls.WithLabelValues(name, operation, outcome)
		}
	}
}

// ObservePool exports a database connection pool's statistics as
// go_sql_* series labelled db_name=name: connections open, in use and
// idle, and above all how often and how long requests waited for a free
// connection (go_sql_wait_count_total, go_sql_wait_duration_seconds_total),
// the first thing to read when answers slow down under load.
func (m *Metrics) ObservePool(name string, db *sql.DB) {
	m.registry.MustRegister(collectors.NewDBStatsCollector(db, name))
}

// ObserveRedis exports momopay_redis_up: whether the rate limits and
// sign-in throttles count in Redis at scrape time (ping, api.Redis.Ping).
// While they do not, this instance counts them on its own (N instances
// allow N times the budget); before, only a log line said so.
func (m *Metrics) ObserveRedis(ping func(context.Context) error) {
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "redis_up",
		Help: "1 when Redis (--redis-url) answered a PING at this scrape; 0 when it did not, or when a call of the rate limits failed within the last second: rate limits and sign-in throttles are then counted per instance."},
		func() float64 {
			if ping(context.Background()) != nil {
				return 0
			}
			return 1
		}))
}

// Handler serves the metrics in Prometheus' text format. A collector that
// fails (the database is down) leaves its series out and the rest is
// served, so the process's own metrics stay visible during an outage.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Register adds a collector (the database collector) to the registry.
func (m *Metrics) Register(c prometheus.Collector) { m.registry.MustRegister(c) }

// methods are the HTTP methods given their own label value; any other
// (a client can send anything) counts as OTHER.
var methods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

// ObserveRequest implements api.ObserveRequest.
func (m *Metrics) ObserveRequest(route, method string, status int, d time.Duration) {
	if !methods[method] {
		method = "OTHER"
	}
	m.httpRequests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.httpDuration.WithLabelValues(route, method).Observe(d.Seconds())
}

// ObserveWebhookAttempt implements webhook.Config.ObserveAttempt.
func (m *Metrics) ObserveWebhookAttempt(outcome string, d time.Duration) {
	m.webhookAttempts.WithLabelValues(outcome).Inc()
	m.webhookDuration.WithLabelValues(outcome).Observe(d.Seconds())
}

// Store decorates the payment store: it counts the transitions to a final
// status and the reconciliation cases, once their database transaction
// committed.
func (m *Metrics) Store(s payment.Store) payment.Store { return &store{Store: s, m: m} }

type store struct {
	payment.Store
	m *Metrics
}

func (s *store) Settle(ctx context.Context, st payment.Settlement) (*payment.Transaction, bool, error) {
	t, changed, err := s.Store.Settle(ctx, st)
	switch {
	case err != nil || t == nil:
	case changed:
		op, status := string(t.Operator), string(t.Status)
		s.m.paymentsSettled.WithLabelValues(op, status).Inc()
		s.m.settleDuration.WithLabelValues(op, status).Observe(t.UpdatedAt.Sub(t.CreatedAt).Seconds())
	case t.Status.Final() && t.Status != st.To && st.Reconcile:
		// The store's rule for a case (payment.Store.Settle): already
		// final, another outcome reported, and reconciliation asked for.
		s.m.reconciliation.WithLabelValues(st.Source).Inc()
	}
	return t, changed, err
}

// Payments decorates the payment service for the API: it counts the
// payments created. Initiate returns a transaction only when it exists and
// its push was sent (or may have been).
func (m *Metrics) Payments(p *payment.Service) *Payments { return &Payments{Service: p, m: m} }

// Payments is payment.Service counting the payments it creates.
type Payments struct {
	*payment.Service
	m *Metrics
}

// Initiate implements api.Payments.
func (p *Payments) Initiate(ctx context.Context, merchantID string, req payment.CreateRequest) (*payment.Transaction, error) {
	t, err := p.Service.Initiate(ctx, merchantID, req)
	if err == nil && t != nil {
		p.m.paymentsCreated.WithLabelValues(string(t.Operator)).Inc()
	}
	return t, err
}

// Operator decorates an operator (outside its circuit breaker, so that
// refusals by an open circuit are counted too) with call counts and
// latencies.
func (m *Metrics) Operator(name string, op operator.Operator) operator.Operator {
	m.initOperator(name)
	return &observedOperator{name: name, op: op, m: m}
}

// Operations and outcomes of operator calls.
const (
	opRequestPayment = "request_payment"
	opPaymentStatus  = "payment_status"

	outcomeOK          = "ok"
	outcomeDeclined    = "declined"     // the payer's failure, answered to the push
	outcomeUnavailable = "unavailable"  // certainly not taken (down, refused)
	outcomeCircuitOpen = "circuit_open" // refused by our breaker, operator not asked
	outcomeTimeout     = "timeout"
	outcomeError       = "error" // ambiguous: may have been taken
)

type observedOperator struct {
	name string
	op   operator.Operator
	m    *Metrics
}

func (o *observedOperator) RequestPayment(ctx context.Context, p operator.Payment) (string, error) {
	start := time.Now()
	ref, err := o.op.RequestPayment(ctx, p)
	o.observe(opRequestPayment, outcomeOf(err), time.Since(start))
	return ref, err
}

func (o *observedOperator) PaymentStatus(ctx context.Context, p operator.Payment) (operator.Outcome, error) {
	start := time.Now()
	out, err := o.op.PaymentStatus(ctx, p)
	o.observe(opPaymentStatus, outcomeOf(err), time.Since(start))
	return out, err
}

func (o *observedOperator) observe(operation, outcome string, d time.Duration) {
	o.m.operatorCalls.WithLabelValues(o.name, operation, outcome).Inc()
	if outcome != outcomeCircuitOpen { // the operator was not asked
		o.m.operatorDuration.WithLabelValues(o.name, operation).Observe(d.Seconds())
	}
}

func outcomeOf(err error) string {
	switch {
	case err == nil:
		return outcomeOK
	case errors.Is(err, context.DeadlineExceeded):
		return outcomeTimeout
	}
	if _, ok := errors.AsType[*operator.DeclinedError](err); ok {
		return outcomeDeclined
	}
	if _, ok := errors.AsType[*operator.CircuitOpenError](err); ok {
		return outcomeCircuitOpen
	}
	if errors.Is(err, operator.ErrUnavailable) {
		return outcomeUnavailable
	}
	return outcomeError
}

// Unwrap implements operator.Unwrapper, so that the optional interfaces of
// the operator inside (poll schedules, refunds, the sandbox payer) stay
// reachable through the metrics.
func (o *observedOperator) Unwrap() operator.Operator { return o.op }
