package moov

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/momopay/momopay/internal/operator/sandbox"
)

// Simulator is a Moov Money merchant API served over HTTP, speaking the
// SOAP of soap.go, for the sandbox and for tests. The payer's number
// chooses what happens, as docs/sandbox.md lists (sandbox.Phone…):
//
//	…01, …06  taken; completed (0) AnswerDelay after the push
//	…02       taken; insufficient funds (10) after AnswerDelay
//	…03       taken; pending (100) for ever
//	…04       taken; push expired (92) after AnswerDelay
//	…05       refused at once: system busy (99)
//	other     taken; pending until Answer approves or refuses it
//
// Moov has no callbacks: outcomes are learnt by getTransactionStatus only.
//
// The referenceid it gives encodes the push's time and the payer's number,
// so scripted payments are answered the same after a restart (as the rest
// of the sandbox is); answers by hand live in memory.
type Simulator struct {
	token string
	now   func() time.Time

	mu     sync.Mutex
	pushes map[string]*simPush // by referenceid
	byExt  map[string]string   // externaldata1 → referenceid
}

type simPush struct {
	at     time.Time
	phone  string // 8 digits after 235
	ext1   string
	answer int // 0 while unanswered by hand, else the status to report
	hand   bool
}

// NewSimulator returns a simulator that accepts only token (as Token or
// Config's token builds it).
func NewSimulator(token string, now func() time.Time) *Simulator {
	if now == nil {
		now = time.Now
	}
	return &Simulator{token: token, now: now, pushes: map[string]*simPush{}, byExt: map[string]string{}}
}

// ErrNoSuchPush is Answer's error for a payment the simulator never took.
var ErrNoSuchPush = errors.New("moov simulator: no such pending push")

// Answer plays the payer of a pending push without a script: approve
// completes it (0), refuse fails it (95). key is our internal_ref
// (externaldata1) or Moov's referenceid. The next status enquiry reports
// it.
func (s *Simulator) Answer(key string, approve bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := key
	if r, ok := s.byExt[key]; ok {
		id = r
	}
	p := s.pushes[id]
	if p == nil || p.hand || scripted(p.phone) {
		return fmt.Errorf("%w: %s", ErrNoSuchPush, key)
	}
	p.hand, p.answer = true, codeFailed
	if approve {
		p.answer = codeCompleted
	}
	return nil
}

// AnswerPayment implements operator.SandboxPayer with Answer.
func (s *Simulator) AnswerPayment(_ context.Context, ref string, approve bool) error {
	return s.Answer(ref, approve)
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
		// What Moov's (Java) stack answers to a body it cannot read.
		w.Header().Set("Content-Type", "text/xml; charset=utf-8")
		w.WriteHeader(http.StatusInternalServerError)
		w.Write(encodeFault("soap:Client", err.Error()))
		return
	}
	var a answer
	switch req.Op {
	case opStatus:
		a = s.status(req.Status)
	default:
		a = s.push(req.Push)
	}
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	w.Write(encodeAnswer(req.Op, a))
}

func (s *Simulator) push(r pushRequest) answer {
	if r.Token != s.token {
		return answer{Status: strconv.Itoa(codeBadCredential), Description: "INVALID_CREDENTIALS"}
	}
	if r.MSISDN == "" || r.Amount <= 0 {
		return answer{Status: strconv.Itoa(codeParameters), Description: "PARAMETERS_INCOMPLETE"}
	}
	phone, ok := strings.CutPrefix(r.MSISDN, "235")
	if !ok || len(phone) != 8 || strings.Trim(phone, "0123456789") != "" {
		return answer{Status: strconv.Itoa(codeBadNumber), Description: "INVALID_NUMBER"}
	}
	if "+235"+phone == sandbox.PhoneUnavailable {
		return answer{Status: strconv.Itoa(codeBusy), Description: "SYSTEM_BUSY"}
	}
	now := s.now()
	id := fmt.Sprintf("%013d%s", now.UnixMilli(), phone)
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, p := range s.pushes {
		if now.Sub(p.at) > memoryTTL {
			delete(s.pushes, k)
			delete(s.byExt, p.ext1)
		}
	}
	s.pushes[id] = &simPush{at: now, phone: phone, ext1: r.ExternalData1}
	if r.ExternalData1 != "" {
		s.byExt[r.ExternalData1] = id
	}
	return answer{Status: strconv.Itoa(codePending), Description: "PENDING", ReferenceID: id, TransID: r.ExternalData1}
}

func (s *Simulator) status(r statusRequest) answer {
	if r.Token != s.token {
		return answer{Status: strconv.Itoa(codeBadCredential), Description: "INVALID_CREDENTIALS"}
	}
	s.mu.Lock()
	id := r.TransID
	if ref, ok := s.byExt[id]; ok {
		id = ref
	}
	var p simPush
	if known := s.pushes[id]; known != nil {
		p = *known
	} else if at, phone, ok := decodeReferenceID(id); ok {
		p = simPush{at: at, phone: phone} // pushed before a restart
	} else {
		s.mu.Unlock()
		return answer{Status: strconv.Itoa(codeNoTransaction), Description: "TRANSACTION_NOT_FOUND", TransID: r.TransID}
	}
	s.mu.Unlock()
	code := codePending
	answered := s.now().Sub(p.at) >= sandbox.AnswerDelay
	switch phone := "+235" + p.phone; {
	case p.hand:
		code = p.answer
	case !answered:
	case phone == sandbox.PhoneSuccess, phone == sandbox.PhoneLostCallback:
		code = codeCompleted
	case phone == sandbox.PhoneFailure:
		code = 10
	case phone == sandbox.PhoneExpired:
		code = codePushExpired
	}
	return answer{Status: strconv.Itoa(code), Description: simDescriptions[code], ReferenceID: id, TransID: p.ext1}
}

var simDescriptions = map[int]string{
	codeCompleted: "SUCCESS", codePending: "PENDING", 10: "INSUFFICIENT_FUNDS",
	codePushExpired: "USSD_PUSH_TIMEOUT", codeFailed: "TRANSACTION_FAILED",
}

// scripted reports whether the payer's number has a scripted behaviour.
func scripted(phone string) bool {
	switch "+235" + phone {
	case sandbox.PhoneSuccess, sandbox.PhoneFailure, sandbox.PhoneNoAnswer, sandbox.PhoneExpired,
		sandbox.PhoneUnavailable, sandbox.PhoneLostCallback:
		return true
	}
	return false
}

// decodeReferenceID reads back a referenceid the simulator gave.
func decodeReferenceID(id string) (time.Time, string, bool) {
	if len(id) != 21 || strings.Trim(id, "0123456789") != "" {
		return time.Time{}, "", false
	}
	ms, err := strconv.ParseInt(id[:13], 10, 64)
	if err != nil {
		return time.Time{}, "", false
	}
	return time.UnixMilli(ms), id[13:], true
}

// StartSimulator serves sim on a loopback port and returns its URL and a
// function that stops it.
func StartSimulator(sim *Simulator) (url string, stop func() error, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: sim, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String() + "/", srv.Close, nil
}
