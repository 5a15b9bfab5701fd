package airtel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/momopay/momopay/internal/operator"
	"github.com/momopay/momopay/internal/operator/operatorhttp"
)

// tokenBackoff is how long a token request that brought no token answers
// every call that needs one, before the next request is sent: an Airtel
// whose token endpoint is down or refuses our credentials is asked about
// once a second, not once per push.
const tokenBackoff = time.Second

// Config is what the adapter needs to talk to one Airtel Money account.
type Config struct {
	// BaseURL is Airtel's API host, e.g. https://openapi.airtel.africa
	// (or Airtel Tchad's own host, see docs/going-live.md).
	BaseURL      string
	ClientID     string
	ClientSecret string
	// CallbackSecret is the private key of callback authentication, as
	// Airtel's portal shows it. Empty: callbacks cannot be checked and are
	// only hints that trigger an enquiry.
	CallbackSecret []byte
	// Client sends the requests; nil gives one with CallTimeout.
	Client *http.Client
	// CallTimeout bounds one HTTP exchange (default 8 s): the push's whole
	// budget, token included, is the payment package's.
	CallTimeout time.Duration
	// RetryAfter is the retry_after given for a push Airtel certainly
	// refused (default 5 s).
	RetryAfter time.Duration
	Now        func() time.Time
	Logger     *slog.Logger
}

// Adapter is the Airtel Money operator. The zero value is not usable; use New.
type Adapter struct {
	cfg  Config
	base string

	tokens      singleflight.Group // one token request at a time, shared by the calls waiting for it
	mu          sync.Mutex
	token       string
	renewAt     time.Time // refresh before Airtel's expiry, not after
	failedUntil time.Time // the last token request failed: calls get failure until then
	failure     error
}

// New returns an adapter for cfg.
func New(cfg Config) *Adapter {
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = 8 * time.Second
	}
	if cfg.Client == nil {
		cfg.Client = operatorhttp.Client(cfg.CallTimeout)
	}
	if cfg.RetryAfter == 0 {
		cfg.RetryAfter = 5 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Adapter{cfg: cfg, base: strings.TrimRight(cfg.BaseURL, "/")}
}

// statusBlock is the status object of every Airtel answer.
type statusBlock struct {
	Code         string `json:"code"`
	Message      string `json:"message"`
	ResultCode   string `json:"result_code"`
	ResponseCode string `json:"response_code"`
	Success      bool   `json:"success"`
}

// answer is one HTTP exchange's result as the adapter reads it.
type answer struct {
	httpStatus int
	body       []byte
	status     statusBlock
	txStatus   string // data.transaction.status, where there is one
}

// call sends one authenticated request. A 401 refreshes the token once and
// sends again: Airtel's tokens are short-lived and may be revoked early.
// An error is a transport failure, with sent telling whether the request
// may have reached Airtel, or an answer that names a field twice
// (saysTwoThings).
func (a *Adapter) call(ctx context.Context, method, path string, body any) (*answer, error) {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return nil, err
		}
	}
	for attempt := 0; ; attempt++ {
		token, err := a.bearer(ctx)
		if err != nil {
			return nil, err
		}
		ans, err := a.send(ctx, method, path, payload, token)
		if err != nil {
			return nil, err
		}
		if ans.httpStatus == http.StatusUnauthorized && attempt == 0 {
			a.forget(token)
			continue
		}
		if err := saysTwoThings(ans.body); err != nil {
			return nil, fmt.Errorf("unreadable answer (HTTP %d): %w", ans.httpStatus, err)
		}
		return ans, nil
	}
}

func (a *Adapter) send(ctx context.Context, method, path string, payload []byte, token string) (*answer, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.CallTimeout)
	defer cancel()
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "*/*")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Country", "TD")
	req.Header.Set("X-Currency", "XAF")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := a.cfg.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	ans := &answer{httpStatus: resp.StatusCode, body: b}
	var env struct {
		Status statusBlock `json:"status"`
		Data   struct {
			Transaction struct {
				Status string `json:"status"`
			} `json:"transaction"`
		} `json:"data"`
	}
	if json.Unmarshal(b, &env) == nil {
		ans.status, ans.txStatus = env.Status, env.Data.Transaction.Status
	}
	return ans, nil
}

// bearer returns a valid access token, fetching one when there is none
// (none yet, near its expiry, or forgotten after a 401). Calls that need a
// token at once share one request to Airtel, and each stops waiting when
// its own context ends; a request that failed answers the calls of the
// next tokenBackoff with its error.
func (a *Adapter) bearer(ctx context.Context) (string, error) {
	a.mu.Lock()
	token, valid := a.token, a.token != "" && a.cfg.Now().Before(a.renewAt)
	failed, failure := a.cfg.Now().Before(a.failedUntil), a.failure
	a.mu.Unlock()
	if valid {
		return token, nil
	}
	if failed {
		return "", failure
	}
	// The request outlives a caller that gives up: the others wait for it.
	ch := a.tokens.DoChan("token", func() (any, error) { return a.fetchToken(context.WithoutCancel(ctx)) })
	select {
	case r := <-ch:
		if r.Err != nil {
			return "", r.Err
		}
		return r.Val.(string), nil
	case <-ctx.Done():
		return "", &tokenError{err: ctx.Err()}
	}
}

// fetchToken asks Airtel for an access token and keeps it, or keeps the
// failure for tokenBackoff.
func (a *Adapter) fetchToken(ctx context.Context) (string, error) {
	token, life, err := a.requestToken(ctx)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.failedUntil, a.failure = a.cfg.Now().Add(tokenBackoff), err
		return "", err
	}
	// Refresh a quarter of the lifetime (at most a minute) before Airtel's
	// expiry, so no request leaves with a token about to die in flight.
	a.token, a.renewAt = token, a.cfg.Now().Add(life-min(life/4, time.Minute))
	a.failedUntil, a.failure = time.Time{}, nil
	return token, nil
}

// requestToken is one client-credentials exchange with Airtel.
func (a *Adapter) requestToken(ctx context.Context) (string, time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, a.cfg.CallTimeout)
	defer cancel()
	payload, _ := json.Marshal(map[string]string{
		"client_id": a.cfg.ClientID, "client_secret": a.cfg.ClientSecret, "grant_type": "client_credentials",
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+"/auth/oauth2/token", bytes.NewReader(payload))
	if err != nil {
		return "", 0, &tokenError{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "*/*")
	resp, err := a.cfg.Client.Do(req)
	if err != nil {
		// A token that did not come (a timeout, a dropped connection) is
		// as certain as a refused one: the push waiting for it never left.
		a.logCall("", "token", start, 0, "", err)
		return "", 0, &tokenError{err: err}
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string          `json:"access_token"`
		ExpiresIn   json.RawMessage `json:"expires_in"`
	}
	err = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&tok)
	if err == nil && (resp.StatusCode != http.StatusOK || tok.AccessToken == "") {
		err = fmt.Errorf("HTTP %d without an access token", resp.StatusCode)
	}
	a.logCall("", "token", start, resp.StatusCode, "", err)
	if err != nil {
		return "", 0, &tokenError{status: resp.StatusCode, err: err}
	}
	return tok.AccessToken, expiresIn(tok.ExpiresIn), nil
}

// tokenError is a token request that brought no token: Airtel refused it,
// or it failed on the way. The push that needed it was certainly not sent.
type tokenError struct {
	status int
	err    error
}

func (e *tokenError) Error() string { return "airtel token: " + e.err.Error() }
func (e *tokenError) Unwrap() error { return e.err }

// expiresIn reads expires_in, a number or a numeric string (both are seen);
// a missing or odd value gives the documented sample's 180 s.
func expiresIn(raw json.RawMessage) time.Duration {
	s := strings.Trim(string(raw), `"`)
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n <= 0 || n > 86400 {
		return 180 * time.Second
	}
	return time.Duration(n * float64(time.Second))
}

// forget drops a token Airtel refused, unless another call replaced it.
func (a *Adapter) forget(token string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.token == token {
		a.token = ""
	}
}

// logCall logs one call to Airtel: never a credential, a token or a body.
func (a *Adapter) logCall(txID, operation string, start time.Time, httpStatus int, code string, err error) {
	attrs := []any{"operator", "AIRTEL", "transaction_id", txID, "operation", operation,
		"latency_ms", time.Since(start).Milliseconds(), "http_status", httpStatus, "outcome_code", code}
	if err != nil {
		a.cfg.Logger.Warn("operator call", append(attrs, "err", err.Error())...)
		return
	}
	a.cfg.Logger.Info("operator call", attrs...)
}

// msisdn is the payer's number as Airtel Tchad wants it: without 235.
func msisdn(phone string) string {
	return strings.TrimPrefix(strings.TrimPrefix(phone, "+"), "235")
}

// notSent reports a transport error that certainly happened before the
// request left: Airtel cannot have taken it.
func notSent(err error) bool {
	if _, ok := errors.AsType[*tokenError](err); ok {
		return true
	}
	if op, ok := errors.AsType[*net.OpError](err); ok && op.Op == "dial" {
		return true
	}
	if _, ok := errors.AsType[*net.DNSError](err); ok {
		return true
	}
	return false
}

// RequestPayment implements operator.Operator: the USSD push.
//
// The answer is read from its codes, never from the HTTP status alone: a
// refusal can come as 200 with status.success=false, and ESB000041 (our id
// exists) means an earlier push of ours got through. A transport error, a
// timeout, 401 (after one fresh token), 429 or 5xx leave the push
// ambiguous: the payment stays PENDING and the enquiries settle it. Only a
// refusal certain to have happened before the push was taken is an
// operator.UnavailableError: not one whose other codes say the push is in
// process, ambiguous or done (pushInDoubt).
func (a *Adapter) RequestPayment(ctx context.Context, p operator.Payment) (string, error) {
	start := time.Now()
	var body pushRequest
	body.Reference = p.Description
	if body.Reference == "" {
		body.Reference = p.Ref
	}
	body.Reference = operator.Clip(body.Reference, 64)
	body.Subscriber.Country, body.Subscriber.Currency, body.Subscriber.MSISDN = "TD", "XAF", msisdn(p.PhoneNumber)
	body.Transaction.Amount, body.Transaction.Country, body.Transaction.Currency, body.Transaction.ID = p.Amount, "TD", "XAF", p.Ref
	ans, err := a.call(ctx, http.MethodPost, "/merchant/v1/payments/", body)
	if err != nil {
		a.logCall(p.TransactionID, "push", start, 0, "", err)
		if notSent(err) {
			return "", &operator.UnavailableError{RetryAfter: a.cfg.RetryAfter, Cause: err}
		}
		return "", fmt.Errorf("airtel push: answer unknown: %w", err)
	}
	st := ans.status
	code := firstOf(st.ResultCode, st.ResponseCode)
	switch {
	case unknownHTTP(ans.httpStatus):
		err = fmt.Errorf("airtel push: HTTP %d, answer unknown", ans.httpStatus)
	case st.Success && !isOK(ans.httpStatus):
		err = fmt.Errorf("airtel push: HTTP %d claiming success, answer unknown", ans.httpStatus)
	case pushTaken(st.Success, st.ResultCode, st.ResponseCode):
	case !st.Success && pushDeclined(st.ResponseCode):
		a.logCall(p.TransactionID, "push", start, ans.httpStatus, st.ResponseCode, nil)
		return "", &operator.DeclinedError{Outcome: outcomeOf(statusFailed, st.ResponseCode, st.Message, "")}
	case !st.Success && pushRefused(st.ResultCode) && !pushInDoubt(st.ResponseCode, ans.txStatus):
		a.logCall(p.TransactionID, "push", start, ans.httpStatus, code, nil)
		return "", &operator.UnavailableError{RetryAfter: a.cfg.RetryAfter, Cause: &RefusalError{Code: code, Message: st.Message}}
	default:
		err = fmt.Errorf("airtel push: HTTP %d with code %q (%s), answer unknown", ans.httpStatus, code, st.Message)
	}
	a.logCall(p.TransactionID, "push", start, ans.httpStatus, code, err)
	// Airtel's enquiries take our own id: nothing to keep.
	return "", err
}

// RefusalError is Airtel's certain refusal of a request, with its code.
type RefusalError struct {
	Code    string
	Message string
}

func (e *RefusalError) Error() string {
	return fmt.Sprintf("airtel refused: %s %s", e.Code, e.Message)
}

type pushRequest struct {
	Reference  string `json:"reference"`
	Subscriber struct {
		Country  string `json:"country"`
		Currency string `json:"currency"`
		MSISDN   string `json:"msisdn"`
	} `json:"subscriber"`
	Transaction struct {
		Amount   int64  `json:"amount"`
		Country  string `json:"country"`
		Currency string `json:"currency"`
		ID       string `json:"id"`
	} `json:"transaction"`
}

// PaymentStatus implements operator.Operator: the enquiry by our id.
// TS, TF and TE are final; TIP, TA, an unknown status and "no such
// transaction" keep the payment PENDING (and are logged with their code).
// Any failure to get a readable answer is an error: unknown, ask again.
func (a *Adapter) PaymentStatus(ctx context.Context, p operator.Payment) (operator.Outcome, error) {
	start := time.Now()
	ans, err := a.call(ctx, http.MethodGet, "/standard/v1/payments/"+p.Ref, nil)
	if err != nil {
		a.logCall(p.TransactionID, "enquiry", start, 0, "", err)
		return operator.Outcome{}, fmt.Errorf("airtel enquiry: %w", err)
	}
	var env struct {
		Data struct {
			Transaction struct {
				AirtelMoneyID string `json:"airtel_money_id"`
				ID            string `json:"id"`
				Message       string `json:"message"`
				Status        string `json:"status"`
			} `json:"transaction"`
		} `json:"data"`
		// Whether the answer has a success field at all (statusBlock reads
		// a missing one as false).
		Status struct {
			Success *bool `json:"success"`
		} `json:"status"`
	}
	perr := json.Unmarshal(ans.body, &env)
	st, tx := ans.status, env.Data.Transaction
	switch {
	case unknownHTTP(ans.httpStatus):
		err = fmt.Errorf("airtel enquiry: HTTP %d, answer unknown", ans.httpStatus)
	case perr != nil:
		err = fmt.Errorf("airtel enquiry: HTTP %d, unreadable answer: %w", ans.httpStatus, perr)
	case tx.Status == "":
		// "No such transaction" (ESB000045, DP00800001025) while the push
		// may still be on its way, or any answer without a status: not an
		// outcome.
		o := operator.Outcome{State: operator.Pending, Code: firstOf(st.ResponseCode, st.ResultCode), Detail: st.Message}
		a.logCall(p.TransactionID, "enquiry", start, ans.httpStatus, o.Code, nil)
		return o, nil
	// A transaction status is believed only from an enquiry that itself
	// succeeded, and only about the transaction asked for: anything else
	// would settle a payment on another payment's outcome, or on an error
	// page's words.
	case !isOK(ans.httpStatus):
		err = fmt.Errorf("airtel enquiry: HTTP %d with a transaction status, answer unknown", ans.httpStatus)
	case enquiryFailed(env.Status.Success, st.ResultCode):
		err = fmt.Errorf("airtel enquiry: the enquiry itself failed (%s %s), answer unknown", firstOf(st.ResultCode, st.Code), st.Message)
	case tx.ID != "" && !strings.EqualFold(tx.ID, p.Ref):
		err = fmt.Errorf("airtel enquiry: the answer is about transaction %q, not %s: answer unknown", operator.Clip(tx.ID, 64), p.Ref)
	}
	if err != nil {
		a.logCall(p.TransactionID, "enquiry", start, ans.httpStatus, firstOf(st.ResultCode, st.ResponseCode), err)
		return operator.Outcome{}, err
	}
	o := outcomeOf(tx.Status, st.ResponseCode, firstOf(tx.Message, st.Message), tx.AirtelMoneyID)
	a.logCall(p.TransactionID, "enquiry", start, ans.httpStatus, o.Code, nil)
	if o.State == operator.Pending {
		a.cfg.Logger.Info("airtel payment not final yet", "transaction_id", p.TransactionID, "status", tx.Status)
	}
	return o, nil
}

// Refund implements operator.Refunder: a full refund by airtel_money_id.
// Unverified: the shape of the answer is taken to be the enquiry's, with
// status.success and a transaction status of TS or SUCCESS when done.
func (a *Adapter) Refund(ctx context.Context, p operator.Payment, airtelMoneyID string) (operator.RefundOutcome, error) {
	start := time.Now()
	var body struct {
		Transaction struct {
			AirtelMoneyID string `json:"airtel_money_id"`
		} `json:"transaction"`
	}
	body.Transaction.AirtelMoneyID = airtelMoneyID
	ans, err := a.call(ctx, http.MethodPost, "/standard/v1/payments/refund", body)
	if err != nil {
		a.logCall(p.TransactionID, "refund", start, 0, "", err)
		if notSent(err) {
			return operator.RefundOutcome{}, &operator.UnavailableError{RetryAfter: a.cfg.RetryAfter, Cause: fmt.Errorf("airtel refund: not sent: %w", err)}
		}
		return operator.RefundOutcome{}, fmt.Errorf("airtel refund: answer unknown: %w", err)
	}
	var env struct {
		Data struct {
			Transaction struct {
				AirtelMoneyID string `json:"airtel_money_id"`
				Status        string `json:"status"`
			} `json:"transaction"`
		} `json:"data"`
	}
	perr := json.Unmarshal(ans.body, &env)
	st := ans.status
	code := firstOf(st.ResponseCode, st.ResultCode)
	other := env.Data.Transaction.AirtelMoneyID != "" && env.Data.Transaction.AirtelMoneyID != airtelMoneyID
	if unknownHTTP(ans.httpStatus) || (st.Success && !isOK(ans.httpStatus)) || perr != nil || (code == "" && !st.Success) || other {
		err = fmt.Errorf("airtel refund: HTTP %d, answer unknown", ans.httpStatus)
		a.logCall(p.TransactionID, "refund", start, ans.httpStatus, code, err)
		return operator.RefundOutcome{}, err
	}
	done, refused := refundAnswer(st, env.Data.Transaction.Status)
	if !done && !refused {
		// In progress, accepted for later, or a code we do not know: the
		// money may yet move, so this is no refusal a person could answer
		// by asking again (a second refund would pay twice).
		err = fmt.Errorf("airtel refund: %s %s, neither done nor refused: answer unknown", code, operator.Clip(st.Message, 200))
		a.logCall(p.TransactionID, "refund", start, ans.httpStatus, code, err)
		return operator.RefundOutcome{}, err
	}
	a.logCall(p.TransactionID, "refund", start, ans.httpStatus, code, nil)
	return operator.RefundOutcome{
		Refunded:    done,
		Code:        code,
		Detail:      st.Message,
		OperatorRef: env.Data.Transaction.AirtelMoneyID,
	}, nil
}

// NextPoll implements operator.PollScheduler. Airtel calls back, so the
// enquiries only catch lost callbacks: the first comes FirstEnquiry after
// the push, then they back off to half the payment's age, at most every
// 30 s.
func (a *Adapter) NextPoll(age time.Duration) time.Duration {
	if age < FirstEnquiry {
		return FirstEnquiry - age
	}
	return min(max(age/2, FirstEnquiry), 30*time.Second)
}

// FirstEnquiry is when Airtel is first asked about a payment. (Airtel
// Tchad's document advises three minutes, unverified; the callback usually
// comes first, and a lost one would then cost the payer minutes.)
const FirstEnquiry = 4 * time.Second

// unknownHTTP reports an HTTP status that says nothing of the request's
// fate: 401 (after a fresh token), 429, a 5xx, or a redirect (never
// followed: operatorhttp.Client).
func unknownHTTP(status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusTooManyRequests || status >= 500 || status/100 == 3
}

func isOK(status int) bool { return status/100 == 2 }

// enquiryFailed reports an answer whose status block says the enquiry
// itself failed: success false, or, where an answer has no success field
// (some integrations read none), a result code other than ESB000010. An
// answer that says neither is read by its transaction status alone.
func enquiryFailed(success *bool, resultCode string) bool {
	if success != nil {
		return !*success
	}
	return resultCode != "" && resultCode != "ESB000010"
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
