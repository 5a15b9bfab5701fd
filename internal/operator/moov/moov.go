package moov

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/momopay/momopay/internal/operator"
	"github.com/momopay/momopay/internal/operator/operatorhttp"
)

// Timeouts and schedule of the Moov adapter, exported so that the wiring
// can use them.
const (
	// PushTimeout bounds one PushWithPending call; past it the push is
	// ambiguous (it may have been taken) and polling settles the payment.
	// It is below the payment service's own bound on a push.
	PushTimeout = 10 * time.Second
	// StatusTimeout bounds one getTransactionStatus call.
	StatusTimeout = 8 * time.Second
	// BusyRetryAfter is the retry_after of a push Moov answered "system
	// busy" (99 or -1): it certainly did not take it.
	BusyRetryAfter = 2 * time.Second
	// ConfigRetryAfter is the retry_after of a push refused because our
	// account or credentials are wrong (98, 4, …): someone must act.
	ConfigRetryAfter = time.Minute
	// NotFoundGrace is how long 94 ("no such transaction") is taken for
	// Moov not having recorded the push yet; after it, each 94 is logged
	// as a warning (polling goes on until expires_at).
	NotFoundGrace = 30 * time.Second
	// Busy enquiries back off from BusyBackoffMin, doubling, to BusyBackoffMax.
	BusyBackoffMin = 2 * time.Second
	BusyBackoffMax = time.Minute
)

// FirstPollDelay is when to ask Moov first. Moov sends no callbacks: the
// enquiries are the only way to learn an outcome, so they start early.
const FirstPollDelay = 3 * time.Second

// NextPoll implements operator.PollScheduler: enquiries only, from
// FirstPollDelay on, then PollDelay.
func (o *Operator) NextPoll(age time.Duration) time.Duration {
	if age < FirstPollDelay {
		return FirstPollDelay - age
	}
	return PollDelay(age)
}

// PollDelay is the wait before the next enquiry of a payment of this age:
// every 3 s in the first 30 s (payers answer within seconds), every 10 s
// until 2 minutes, then every 30 s.
func PollDelay(age time.Duration) time.Duration {
	switch {
	case age < 30*time.Second:
		return 3 * time.Second
	case age < 2*time.Minute:
		return 10 * time.Second
	default:
		return 30 * time.Second
	}
}

// maxAnswer bounds what is read of an answer: Moov's are a few hundred bytes.
const maxAnswer = 64 << 10

// Operator is the Moov Money adapter. It implements operator.Operator.
type Operator struct {
	url    string
	token  string
	client *http.Client
	now    func() time.Time
	log    *slog.Logger
	// pushTimeout and statusTimeout are PushTimeout and StatusTimeout;
	// tests shorten them.
	pushTimeout, statusTimeout time.Duration

	mu        sync.Mutex
	busyUntil time.Time
	backoff   time.Duration
}

// New returns an adapter for cfg. client may be nil (a plain client is
// used; each call has its own timeout), now nil (time.Now).
func New(cfg Config, client *http.Client, now func() time.Time, log *slog.Logger) (*Operator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	token, err := cfg.token()
	if err != nil {
		return nil, err
	}
	if client == nil {
		client = operatorhttp.Client(0)
	}
	if now == nil {
		now = time.Now
	}
	return &Operator{url: cfg.URL, token: token, client: client, now: now, log: log,
		pushTimeout: PushTimeout, statusTimeout: StatusTimeout}, nil
}

// BusyError is an enquiry not made, or answered "busy", while Moov asks
// callers to back off.
type BusyError struct {
	RetryAfter time.Duration
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("moov busy: backing off for %s", e.RetryAfter.Round(time.Millisecond))
}

// HTTPError is an answer with an HTTP status other than 200 and no SOAP
// fault: its meaning is unknown.
type HTTPError struct {
	Status int
}

func (e *HTTPError) Error() string { return fmt.Sprintf("moov answered HTTP %d", e.Status) }

// RequestPayment sends PushWithPending. Only an answer that certainly
// refuses the push because of Moov or our account (busy, credentials), or
// a connection that could not even be opened, gives
// operator.UnavailableError; timeouts, HTTP errors, faults and unreadable
// answers are ambiguous, so the payment stays PENDING and polling settles.
func (o *Operator) RequestPayment(ctx context.Context, p operator.Payment) (string, error) {
	body := pushRequest{
		Token: o.token, MSISDN: msisdn(p.PhoneNumber), Message: message(p),
		Amount: p.Amount, ExternalData1: p.Ref,
	}
	a, err := o.call(ctx, opPushWithPending, p, o.pushTimeout, body)
	if err != nil {
		if dialFailed(err) {
			return "", &operator.UnavailableError{RetryAfter: BusyRetryAfter, Cause: err}
		}
		return "", err
	}
	code, _ := a.code()
	switch {
	case code == codeCompleted, code == codePending:
		return a.ReferenceID, nil
	case code == codeBusy, code == codeBusyToo:
		return "", &operator.UnavailableError{RetryAfter: BusyRetryAfter, Cause: errors.New(detail(code, a.Description))}
	case configErrors[code] != "":
		o.log.Error("ALERT moov refused our account or request: check MOMOPAY_MOOV_* and the contract with Moov",
			"transaction_id", p.TransactionID, "internal_ref", p.Ref, "moov_status", code, "detail", detail(code, a.Description))
		return "", &operator.UnavailableError{RetryAfter: ConfigRetryAfter, Cause: errors.New(detail(code, a.Description))}
	case failures[code] != "":
		// Refused for good because of the payer or the payment (funds,
		// limits, not registered): not an outage. The payment is kept and
		// settled FAILED with the reason at once; the circuit breaker does
		// not count it against everyone's payments.
		out := outcomeOf(a)
		out.State, out.Reason = operator.Failed, reasonOf(code)
		o.log.Info("moov declined the push", "transaction_id", p.TransactionID, "internal_ref", p.Ref, "moov_status", code)
		return "", &operator.DeclinedError{Outcome: out}
	default:
		// 92, 94 or a code we do not know: the push may stand.
		o.log.Warn("moov push answered with an unexpected status; polling will settle", "transaction_id", p.TransactionID, "internal_ref", p.Ref, "moov_status", code)
		return a.ReferenceID, nil
	}
}

// PaymentStatus asks getTransactionStatus. It never reports FAILED unless
// Moov said so with one of its failure codes.
func (o *Operator) PaymentStatus(ctx context.Context, p operator.Payment) (operator.Outcome, error) {
	if wait := o.backingOff(); wait > 0 {
		return operator.Outcome{}, &BusyError{RetryAfter: wait}
	}
	transid := p.OperatorRef // the push's referenceid, kept with the transaction
	if transid == "" {
		// The push's answer was lost: UNVERIFIED whether Moov finds a
		// transaction by externaldata1.
		transid = p.Ref
	}
	a, err := o.call(ctx, opStatus, p, o.statusTimeout, statusRequest{Token: o.token, TransID: transid})
	if err != nil {
		return operator.Outcome{}, err
	}
	if !about(a, p, transid) {
		o.log.Warn("moov status answered about another transaction; will ask again", "transaction_id", p.TransactionID, "internal_ref", p.Ref,
			"transid", clip(a.TransID), "referenceid", clip(a.ReferenceID))
		return operator.Outcome{}, fmt.Errorf("moov status: the answer names transid %q, referenceid %q, not the payment asked about (%s, %s): answer unknown",
			clip(a.TransID), clip(a.ReferenceID), p.Ref, transid)
	}
	code, _ := a.code()
	out := outcomeOf(a)
	if code == codeBusy || code == codeBusyToo {
		return operator.Outcome{}, &BusyError{RetryAfter: o.busy()}
	}
	o.notBusy()
	switch {
	case code == codeNoTransaction && o.now().Sub(p.RequestedAt) > NotFoundGrace:
		o.log.Warn("moov does not know this payment", "transaction_id", p.TransactionID, "internal_ref", p.Ref, "transid", transid, "moov_status", code)
	case configErrors[code] != "":
		o.log.Error("ALERT moov refused our status enquiry: check MOMOPAY_MOOV_* and the contract with Moov",
			"transaction_id", p.TransactionID, "internal_ref", p.Ref, "moov_status", code, "detail", out.Detail)
	case out.State == operator.Pending && code != codePending && code != codeNoTransaction:
		o.log.Warn("moov answered an unknown status code; will ask again", "transaction_id", p.TransactionID, "internal_ref", p.Ref, "moov_status", code)
	}
	return out, nil
}

// about reports whether a status answer can be about p, asked for by
// transid. Its referenceid, when it has one and p's push was given one,
// must be that one; its transid must not be another of our internal_refs.
// (What Moov puts in a status answer's transid is UNVERIFIED: our
// externaldata1, or an id of its own, as in the SDKs' push answers; only
// an id that is certainly another payment's is refused.) An answer naming
// another payment would settle p on that payment's outcome.
func about(a answer, p operator.Payment, transid string) bool {
	if p.OperatorRef != "" && a.ReferenceID != "" && a.ReferenceID != p.OperatorRef && a.ReferenceID != transid {
		return false
	}
	return !(internalRef(a.TransID) && !strings.EqualFold(a.TransID, p.Ref))
}

// internalRef reports whether id has the form of momopay's internal_ref
// (SERVICE- and 8 letters or digits), as externaldata1 carries it.
func internalRef(id string) bool { return operator.ValidRef(strings.ToUpper(id)) }

// clip shortens an operator's id for a log line or an error.
func clip(s string) string {
	if c := operator.Clip(s, 64); c != s {
		return c + "…"
	}
	return s
}

// backingOff returns how long enquiries still wait after a busy answer.
func (o *Operator) backingOff() time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.busyUntil.Sub(o.now())
}

// busy records a busy answer and returns the back-off it starts.
func (o *Operator) busy() time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.backoff = min(max(2*o.backoff, BusyBackoffMin), BusyBackoffMax)
	o.busyUntil = o.now().Add(o.backoff)
	return o.backoff
}

func (o *Operator) notBusy() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.backoff = 0
}

// call posts one operation and reads its answer, logging the call with
// its latency and codes (never the envelope: it holds the token).
func (o *Operator) call(ctx context.Context, op string, p operator.Payment, timeout time.Duration, body any) (answer, error) {
	start := time.Now()
	httpStatus := 0
	a, err := func() (answer, error) {
		env, err := encodeRequest(op, body)
		if err != nil {
			return answer{}, err
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.url, bytes.NewReader(env))
		if err != nil {
			return answer{}, err
		}
		req.Header.Set("Content-Type", ContentType)
		resp, err := o.client.Do(req)
		if err != nil {
			return answer{}, err
		}
		defer resp.Body.Close()
		httpStatus = resp.StatusCode
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		if err != nil {
			return answer{}, err
		}
		a, err := decodeAnswer(data, op)
		var fault *Fault
		switch {
		case errors.As(err, &fault):
			// A fault may quote our request back, token included: it
			// goes to the log and to the payment's timeline without it.
			if o.token != "" {
				fault.Code = strings.ReplaceAll(fault.Code, o.token, "[token]")
				fault.String = strings.ReplaceAll(fault.String, o.token, "[token]")
			}
			return answer{}, err
		case resp.StatusCode != http.StatusOK:
			return answer{}, &HTTPError{Status: resp.StatusCode}
		}
		return a, err
	}()
	attrs := []any{"transaction_id", p.TransactionID, "internal_ref", p.Ref, "operation", op, "latency_ms", time.Since(start).Milliseconds(), "http_status", httpStatus}
	if err != nil {
		o.log.Warn("moov call failed", append(attrs, "err", err)...)
	} else {
		o.log.Info("moov call", append(attrs, "moov_status", strings.TrimSpace(a.Status))...)
	}
	return a, err
}

// dialFailed reports an error from opening the connection: nothing was
// sent, so Moov certainly did not take the push.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// msisdn is the payer's number as Moov wants it: the country code and
// number without "+" (the SDKs' examples: 229…). UNVERIFIED for Tchad.
func msisdn(phone string) string { return strings.TrimPrefix(phone, "+") }

// message is the text of the push. UNVERIFIED whether Moov shows it to
// the payer or limits its length; it is kept short and plain.
func message(p operator.Payment) string {
	m := p.Description
	if m == "" {
		m = fmt.Sprintf("Paiement %d XAF", p.Amount)
	}
	if r := []rune(m); len(r) > 100 {
		m = string(r[:100])
	}
	return m
}

var (
	_ operator.Operator      = (*Operator)(nil)
	_ operator.PollScheduler = (*Operator)(nil)
	_ operator.SandboxPayer  = (*Simulator)(nil)
)
