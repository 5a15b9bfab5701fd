package webhook

import (
	"log/slog"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/store"
)

// DefaultTimeout is how long a receiver has to answer an attempt: the
// contract counts no 2xx within 10 seconds as a failure (section 6.5).
const DefaultTimeout = 10 * time.Second

// MaxAttempts is the contract's number of automatic attempts (section 6.5);
// after the last one fails the delivery is undelivered and waits for a
// person to re-send it.
const MaxAttempts = 5

// retryDelays are the waits after failed attempts 1 to 4 (contract table
// 6.5), which put the attempts at 0, 1 min, 6 min, 36 min and 2 h 36 min.
var retryDelays = [MaxAttempts - 1]time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour}

// ExcerptLimit is how much of a receiver's answer is kept with an attempt:
// enough to show a merchant why their endpoint refused, small enough that a
// chatty receiver cannot bloat the database.
const ExcerptLimit = 1024

// Errors callers can act on. They are *payment.Error values so that the
// dashboard maps them to HTTP with the same table as the API.
var (
	// ErrEndpointNotFound: no such endpoint for this merchant, or deleted.
	ErrEndpointNotFound = &payment.Error{Code: payment.ENOTFOUND, Message: "webhook endpoint not found"}
	// ErrDeliveryNotFound: no such delivery for this merchant.
	ErrDeliveryNotFound = &payment.Error{Code: payment.ENOTFOUND, Message: "webhook delivery not found"}
)

// Config wires a Service.
type Config struct {
	// DB holds the three webhook tables (and is where the settling
	// transaction that calls Enqueue runs).
	DB *store.DB
	// Live applies live mode's rules: https only and public addresses only,
	// checked at registration, before each send and at dial time.
	Live bool
	// Timeout bounds one attempt (default DefaultTimeout). Tests shorten it
	// to exercise slow receivers without waiting 10 seconds.
	Timeout time.Duration
	// Now stamps rows and webhook-timestamp and decides when an attempt is
	// due. It is injected so that tests walk the 2 h 36 min schedule with a
	// fake clock instead of sleeping.
	Now func() time.Time
	// Logger receives one line per attempt: ids, status and error text,
	// never a secret or a body.
	Logger *slog.Logger
	// ObserveAttempt, when set, is told the outcome (one of the Outcome
	// constants) and duration of every POST made to a receiver, for metrics.
	ObserveAttempt func(outcome string, d time.Duration)
	// OwnListeners are the addresses the process serves on (the API and
	// the admin listener): no delivery connects to them (NewHTTPClient).
	OwnListeners []netip.AddrPort
}

// Service manages merchants' webhook endpoints and delivers events to them.
// It owns the webhook_endpoints, webhook_deliveries and webhook_attempts
// tables; every query is scoped by merchant id. No method holds a database
// transaction (or SQLite's single connection) while waiting on a receiver,
// so a slow endpoint costs one worker for at most Timeout and nothing else.
type Service struct {
	db      *store.DB
	live    bool
	timeout time.Duration
	now     func() time.Time
	log     *slog.Logger
	client  *http.Client
	observe func(outcome string, d time.Duration)
	// batches share an attempt's statements among concurrent attempts
	// (attempt_batch.go).
	batches *batches

	// manual bounds the test events and re-sends waiting on each endpoint.
	manual manualSends

	// dispatchers are this process's running dispatchers, which Wake
	// tells of deliveries just committed.
	mu          sync.Mutex
	dispatchers map[*Dispatcher]struct{}
}

// NewService builds a Service from cfg, filling in defaults.
func NewService(cfg Config) *Service {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Service{
		db: cfg.DB, live: cfg.Live, timeout: cfg.Timeout, now: cfg.Now, log: cfg.Logger,
		client: NewHTTPClient(cfg.Live, cfg.Timeout, cfg.OwnListeners...), observe: cfg.ObserveAttempt,
	}
	s.batches = s.newBatches()
	return s
}

// lease is how long a claimed attempt keeps others off the delivery: longer
// than any attempt can take (the HTTP client gives up at timeout; the claim
// and the write of the outcome are single short statements), so a second
// look at the same delivery (another instance's dispatcher) never sends
// concurrently with the first. It is also how long an attempt held by a
// killed process waits before it is made again, so it is no longer than
// that: with the 10 s timeout, 15 s, and the next dispatcher poll makes it.
func (s *Service) lease() time.Duration { return s.timeout + 5*time.Second }

// stamp is the service's clock at the database's precision.
func (s *Service) stamp() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// isUUID guards queries on PostgreSQL's uuid columns, where a malformed id
// is a query error instead of "no rows".
func isUUID(ids ...string) bool {
	for _, id := range ids {
		if !payment.ValidID(id) {
			return false
		}
	}
	return true
}
