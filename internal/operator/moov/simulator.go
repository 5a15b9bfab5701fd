package moov

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The payer numbers with a scripted behaviour (docs/sandbox.md). Any other
// number waits until it is answered by hand (AnswerPayment).
const (
	PhoneSuccess      = "+23560000001" // completed after AnswerDelay
	PhoneFailure      = "+23560000002" // insufficient funds (10) after AnswerDelay
	PhoneNoAnswer     = "+23560000003" // pending for ever
	PhoneExpired      = "+23560000004" // push timed out (92) after AnswerDelay
	PhoneUnavailable  = "+23560000005" // push refused: system busy (99)
	PhoneLostCallback = "+23560000006" // completed after AnswerDelay (Moov has no callback to lose)
)

// AnswerDelay is how long the scripted payers take by default.
const AnswerDelay = 2 * time.Second

// Simulator is a Moov Money merchant API served over HTTP, speaking the
// SOAP of soap.go, for the sandbox and for tests. The payer's number
// chooses what happens, as docs/sandbox.md lists:
//
//	…01, …06  taken; completed (0) AnswerDelay after the push
//	…02       taken; insufficient funds (10) after AnswerDelay
//	…03       taken; pending (100) for ever
//	…04       taken; push timed out (92) after AnswerDelay
//	…05       refused at once: system busy (99)
//	other     taken; pending (100) until answered by hand
//
// An answer by hand (AnswerPayment) wins over the script: approved is
// completed (0), refused is failed (95). Moov has no callbacks: outcomes are
// learnt by getTransactionStatus only.
//
// It knows payments by the externaldata1 of their push (momopay's
// internal_ref) and by the referenceid it gave. Given a Ledger, it reads
// every payment from it, and keeps none in memory: the ledger also has the
// payments pushed before a restart or by another process, and the answers
// given by hand in any process.
type Simulator struct {
	cfg SimulatorConfig

	mu      sync.Mutex
	records map[string]*Record // by externaldata1
	refs    map[string]string  // referenceid → externaldata1
	pruned  time.Time
}

// Record is what the simulator knows of one pushed payment.
type Record struct {
	Ref         string // externaldata1: momopay's internal_ref
	PhoneNumber string // +235…
	Amount      int64
	RequestedAt time.Time
	// Answered is set once the payer answered by hand; Approved says how.
	Answered bool
	Approved bool
}

// Ledger keeps the simulator's records outside its memory, so that they
// survive a restart and are shared by every process of one sandbox
// (momopay keeps them in its database).
type Ledger interface {
	// Payment returns the record of ref, or ok false.
	Payment(ctx context.Context, ref string) (r Record, ok bool, err error)
	// Answer records the payer's answer by hand.
	Answer(ctx context.Context, ref string, approve bool) error
}

// SimulatorConfig configures a Simulator.
type SimulatorConfig struct {
	// Token is the only token accepted (Token or Config builds it).
	Token string
	// AnswerDelay is how long scripted payers take (AnswerDelay when
	// zero).
	AnswerDelay time.Duration
	// Ledger keeps records; nil keeps them in memory only.
	Ledger Ledger
	Now    func() time.Time
	Logger *slog.Logger
}

// NewSimulator returns a simulator.
func NewSimulator(cfg SimulatorConfig) *Simulator {
	if cfg.AnswerDelay == 0 {
		cfg.AnswerDelay = AnswerDelay
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Simulator{cfg: cfg, records: map[string]*Record{}, refs: map[string]string{}}
}

// ErrNoSuchPush is AnswerPayment's error for a payment the simulator
// never took.
var ErrNoSuchPush = errors.New("moov simulator: no such payment")

// AnswerPayment implements operator.SandboxPayer: the payer approves or
// refuses the payment pushed with externaldata1 ref (or Moov's
// referenceid). The next status enquiry reports it.
func (s *Simulator) AnswerPayment(ctx context.Context, ref string, approve bool) error {
	rec, ok, err := s.record(ctx, ref)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %s", ErrNoSuchPush, ref)
	}
	if s.cfg.Ledger != nil {
		return s.cfg.Ledger.Answer(ctx, rec.Ref, approve)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.records[rec.Ref]
	r.Answered, r.Approved = true, approve
	return nil
}

// record finds a payment by externaldata1 or referenceid: in memory, then
// in the ledger, whose answer by hand is always read afresh.
func (s *Simulator) record(ctx context.Context, key string) (Record, bool, error) {
	s.mu.Lock()
	ref := key
	if r, ok := s.refs[key]; ok {
		ref = r
	} else if r := refOf(key); r != "" {
		ref = r
	}
	var rec Record
	mem, inMemory := s.records[ref]
	if inMemory {
		rec = *mem
	}
	s.mu.Unlock()
	if s.cfg.Ledger == nil {
		return rec, inMemory, nil
	}
	stored, ok, err := s.cfg.Ledger.Payment(ctx, ref)
	switch {
	case err != nil:
		return Record{}, false, err
	case !ok:
		return rec, inMemory, nil
	case inMemory:
		rec.Answered, rec.Approved = stored.Answered, stored.Approved
		return rec, true, nil
	}
	return stored, true, nil
}

// ServeHTTP answers one SOAP call.
func (s *Simulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST a SOAP envelope", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		return
	}
	req, err := decodeRequest(body)
	if err != nil {
		// What a SOAP stack answers to a body it cannot read.
		w.Header().Set("Content-Type", "text/xml; charset=utf-8")
		w.WriteHeader(http.StatusInternalServerError)
		w.Write(encodeFault("soap:Client", err.Error()))
		return
	}
	var a answer
	switch req.Op {
	case opStatus:
		a, err = s.status(r.Context(), req.Status)
	default:
		a = s.push(req.Push)
	}
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	if err != nil {
		s.cfg.Logger.Error("moov simulator", "err", err)
		w.WriteHeader(http.StatusInternalServerError)
		w.Write(encodeFault("soap:Server", "internal error"))
		return
	}
	w.Write(encodeAnswer(req.Op, a))
}

func (s *Simulator) push(r pushRequest) answer {
	if r.Token != s.cfg.Token {
		return answer{Status: strconv.Itoa(codeBadCredential), Description: "INVALID_CREDENTIALS"}
	}
	if r.MSISDN == "" || r.Amount <= 0 || r.ExternalData1 == "" {
		return answer{Status: strconv.Itoa(codeParameters), Description: "PARAMETERS_INCOMPLETE"}
	}
	digits, ok := strings.CutPrefix(r.MSISDN, "235")
	if !ok || len(digits) != 8 || strings.Trim(digits, "0123456789") != "" {
		return answer{Status: strconv.Itoa(codeBadNumber), Description: "INVALID_NUMBER"}
	}
	phone := "+235" + digits
	if phone == PhoneUnavailable {
		return answer{Status: strconv.Itoa(codeBusy), Description: "SYSTEM_BUSY"}
	}
	id := referenceID(r.ExternalData1)
	if s.cfg.Ledger == nil {
		s.remember(r.ExternalData1, id, phone, r.Amount)
	}
	return answer{Status: strconv.Itoa(codePending), Description: "PENDING", ReferenceID: id, TransID: r.ExternalData1}
}

// remember keeps a push in memory, when there is no Ledger. (With one,
// the ledger has the payment already, since momopay writes it before
// pushing: a copy in memory would only cost a busy sandbox megabytes.)
func (s *Simulator) remember(ref, referenceid, phone string, amount int64) {
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.pruned) > time.Minute {
		s.prune(now)
	}
	if rec := s.records[ref]; rec == nil {
		s.records[ref] = &Record{Ref: ref, PhoneNumber: phone, Amount: amount, RequestedAt: now}
	}
	if refOf(referenceid) != ref {
		// Only a ref that is not one of our internal_refs needs this
		// way back from its referenceid; refOf finds ours.
		s.refs[referenceid] = ref
	}
}

// simMemory is how long the simulator keeps a payment in memory: longer
// than any PENDING window (5 minutes at most) and the expiry check's last
// enquiries.
const simMemory = 15 * time.Minute

// prune forgets payments older than simMemory (the ledger, if any, keeps
// them).
func (s *Simulator) prune(now time.Time) {
	for ref, rec := range s.records {
		if now.Sub(rec.RequestedAt) > simMemory {
			delete(s.records, ref)
			delete(s.refs, referenceID(ref))
		}
	}
	s.pruned = now
}

func (s *Simulator) status(ctx context.Context, r statusRequest) (answer, error) {
	if r.Token != s.cfg.Token {
		return answer{Status: strconv.Itoa(codeBadCredential), Description: "INVALID_CREDENTIALS"}, nil
	}
	rec, ok, err := s.record(ctx, r.TransID)
	if err != nil {
		return answer{}, err
	}
	if !ok {
		return answer{Status: strconv.Itoa(codeNoTransaction), Description: "TRANSACTION_NOT_FOUND", TransID: r.TransID}, nil
	}
	code := codePending
	answered := s.cfg.Now().Sub(rec.RequestedAt) >= s.cfg.AnswerDelay
	switch {
	case rec.Answered && rec.Approved:
		code = codeCompleted
	case rec.Answered:
		code = codeFailed
	case !answered:
	case rec.PhoneNumber == PhoneSuccess, rec.PhoneNumber == PhoneLostCallback:
		code = codeCompleted
	case rec.PhoneNumber == PhoneFailure:
		code = 10
	case rec.PhoneNumber == PhoneExpired:
		code = codePushExpired
	}
	return answer{Status: strconv.Itoa(code), Description: simDescriptions[code], ReferenceID: referenceID(rec.Ref), TransID: rec.Ref}, nil
}

// referenceID is the referenceid the simulator gives the push with
// externaldata1 ref: 17 digits like Moov's, derived from ref, so that every
// process of one sandbox gives the same one.
func referenceID(ref string) string {
	if code, ok := strings.CutPrefix(ref, "SERVICE-"); ok && len(code) == 8 && strings.ToUpper(code) == code {
		// Our internal_ref read in base 36: any process of the sandbox
		// (the server, the CLI) finds the payment again from it, as Moov
		// finds its own, since the service asks by the referenceid.
		if n, err := strconv.ParseUint(code, 36, 64); err == nil {
			return fmt.Sprintf("7%016d", n)
		}
	}
	h := fnv.New64a()
	h.Write([]byte(ref))
	return fmt.Sprintf("7%016d", h.Sum64()%1e16)
}

// refOf is the internal_ref a referenceid encodes (referenceID), or "".
func refOf(referenceID string) string {
	digits, ok := strings.CutPrefix(referenceID, "7")
	if !ok || len(digits) != 16 {
		return ""
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || n >= 2821109907456 { // 36^8
		return ""
	}
	code := strings.ToUpper(strconv.FormatUint(n, 36))
	return "SERVICE-" + strings.Repeat("0", 8-len(code)) + code
}

var simDescriptions = map[int]string{
	codeCompleted: "SUCCESS", codePending: "PENDING", 10: "INSUFFICIENT_FUNDS",
	codePushExpired: "USSD_PUSH_TIMEOUT", codeFailed: "TRANSACTION_FAILED",
}
