// Package airtelsim is a simulator of Airtel Money's Open API, served in
// process: OAuth tokens, the USSD push, the status enquiry, signed
// callbacks and refunds, with Airtel's codes. Sandbox mode runs the real
// Airtel adapter against it, and tests use it as the fake Airtel.
//
// The payer's number chooses the behaviour (see the Phone constants). It
// speaks only the wire protocol: it knows nothing of momopay's database,
// except through a Ledger the caller may give it to keep its records.
package airtelsim

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/momopay/momopay/internal/operator/operatorhttp"
)

// The payer numbers with a scripted behaviour, as Airtel sees them
// (without 235). Any other number waits until it is answered by hand
// (AnswerPayment) and otherwise stays in progress.
const (
	PhoneSuccess      = "60000001" // confirms after AnswerDelay, by callback
	PhoneFailure      = "60000002" // refuses (not enough balance) after AnswerDelay, by callback
	PhoneNoAnswer     = "60000003" // never answers
	PhoneExpired      = "60000004" // the request expires (TE) after AnswerDelay; no callback
	PhoneUnavailable  = "60000005" // the push is refused (ESB000011)
	PhoneLostCallback = "60000006" // confirms after AnswerDelay, but no callback is sent
	// PhoneCodePrefix followed by two digits NN refuses after AnswerDelay
	// with the code DP008000010NN, by callback: 61000002 is a wrong PIN.
	PhoneCodePrefix = "610000"
)

// Record is what the simulator knows of one pushed payment.
type Record struct {
	ID          string // the merchant's (momopay's) transaction.id
	MSISDN      string
	Amount      int64
	RequestedAt time.Time
	// Answered is set once the payer answered by hand; Approved says how.
	Answered bool
	Approved bool
}

// Ledger keeps the simulator's records outside its memory, so that they
// survive a restart and are shared by every process of one sandbox. The
// caller builds it (momopay keeps it in its own database).
type Ledger interface {
	// Payment returns the record of id, or ok false.
	Payment(ctx context.Context, id string) (r Record, ok bool, err error)
	// Answer records the payer's answer by hand.
	Answer(ctx context.Context, id string, approve bool) error
}

// Config configures a Simulator.
type Config struct {
	ClientID     string
	ClientSecret string
	// CallbackSecret signs callbacks (Base64 HMAC-SHA256 of the raw
	// transaction object, in the body's hash field); empty sends them
	// unsigned.
	CallbackSecret []byte
	// CallbackURL returns where to post callbacks ("" loses them, as a real
	// callback can be lost).
	CallbackURL func() string
	Client      *http.Client
	// TokenLifetime is the expires_in of tokens (default 180 s).
	TokenLifetime time.Duration
	// AnswerDelay is how long the scripted payers take (default 2 s).
	AnswerDelay time.Duration
	// Ledger keeps records; nil keeps them in memory only.
	Ledger Ledger
	Now    func() time.Time
	Logger *slog.Logger
}

// Simulator is a fake Airtel. The zero value is not usable; use New.
type Simulator struct {
	cfg Config

	mu     sync.Mutex
	tokens map[string]time.Time // access token -> expiry
	// pushed is when each transaction.id was pushed (Unix nanoseconds):
	// what refuses a second push of one id, and what prune reads.
	pushed map[string]int64
	// records holds the pushes themselves, only without a Ledger: with
	// one, the ledger has every payment, and a second copy in memory
	// would cost a sandbox taking 100 payments a second some 60 MB over
	// keepRecords.
	records  map[string]*Record // by transaction.id
	refunded map[string]bool    // by transaction.id
	pushes   int
	pruned   time.Time
}

// keepRecords is how long the simulator's memory keeps a push: longer than
// any payment stays PENDING.
const keepRecords = time.Hour

// prune forgets old pushes and expired tokens, at most once a minute, so a
// long-running sandbox does not grow. Called with s.mu held.
func (s *Simulator) prune(now time.Time) {
	if now.Sub(s.pruned) < time.Minute {
		return
	}
	s.pruned = now
	for id, at := range s.pushed {
		if now.Sub(time.Unix(0, at)) > keepRecords {
			delete(s.pushed, id)
			delete(s.records, id)
			delete(s.refunded, id)
		}
	}
	for tok, exp := range s.tokens {
		if !now.Before(exp) {
			delete(s.tokens, tok)
		}
	}
}

// New returns a simulator.
func New(cfg Config) *Simulator {
	if cfg.TokenLifetime == 0 {
		cfg.TokenLifetime = 180 * time.Second
	}
	if cfg.AnswerDelay == 0 {
		cfg.AnswerDelay = 2 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Client == nil {
		cfg.Client = operatorhttp.Client(10 * time.Second)
	}
	if cfg.CallbackURL == nil {
		cfg.CallbackURL = func() string { return "" }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Simulator{cfg: cfg, tokens: map[string]time.Time{}, pushed: map[string]int64{}, records: map[string]*Record{}, refunded: map[string]bool{}}
}

// Handler serves Airtel's API.
func (s *Simulator) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /auth/oauth2/token", s.handleToken)
	mux.HandleFunc("POST /merchant/v1/payments/", s.authorized(s.handlePush))
	mux.HandleFunc("GET /standard/v1/payments/{id}", s.authorized(s.handleEnquiry))
	mux.HandleFunc("POST /standard/v1/payments/refund", s.authorized(s.handleRefund))
	return mux
}

// RevokeTokens makes every token issued so far invalid, as an early expiry
// on Airtel's side would.
func (s *Simulator) RevokeTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.tokens)
}

// Pushes counts the pushes taken (duplicates included).
func (s *Simulator) Pushes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pushes
}

type status struct {
	Code         string `json:"code"`
	Message      string `json:"message"`
	ResultCode   string `json:"result_code"`
	ResponseCode string `json:"response_code"`
	Success      bool   `json:"success"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func refusal(w http.ResponseWriter, httpStatus int, result, message string) {
	writeJSON(w, httpStatus, map[string]any{"status": status{Code: "400", Message: message, ResultCode: result, Success: false}})
}

func (s *Simulator) handleToken(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		GrantType    string `json:"grant_type"`
	}
	if json.NewDecoder(r.Body).Decode(&req) != nil || req.GrantType != "client_credentials" ||
		!hmac.Equal([]byte(req.ClientID), []byte(s.cfg.ClientID)) || !hmac.Equal([]byte(req.ClientSecret), []byte(s.cfg.ClientSecret)) {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client", "error_description": "Client authentication failed"})
		return
	}
	token := rand.Text()
	s.mu.Lock()
	s.tokens[token] = s.cfg.Now().Add(s.cfg.TokenLifetime)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"access_token": token, "expires_in": int(s.cfg.TokenLifetime / time.Second), "token_type": "bearer"})
}

func (s *Simulator) authorized(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		exp, known := s.tokens[token]
		s.mu.Unlock()
		if !ok || !known || !s.cfg.Now().Before(exp) {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_token", "error_description": "Access token expired or invalid"})
			return
		}
		switch {
		case r.Header.Get("X-Country") != "TD":
			refusal(w, http.StatusBadRequest, "ESB000034", "Invalid country")
		case r.Header.Get("X-Currency") != "XAF":
			refusal(w, http.StatusBadRequest, "ESB000035", "Invalid currency")
		default:
			next(w, r)
		}
	}
}

type pushBody struct {
	Reference  string `json:"reference"`
	Subscriber struct {
		Country  string `json:"country"`
		Currency string `json:"currency"`
		MSISDN   string `json:"msisdn"`
	} `json:"subscriber"`
	Transaction struct {
		Amount   json.Number `json:"amount"`
		Country  string      `json:"country"`
		Currency string      `json:"currency"`
		ID       string      `json:"id"`
	} `json:"transaction"`
}

func (s *Simulator) handlePush(w http.ResponseWriter, r *http.Request) {
	var b pushBody
	dec := json.NewDecoder(r.Body)
	dec.UseNumber()
	if dec.Decode(&b) != nil || b.Transaction.ID == "" {
		refusal(w, http.StatusBadRequest, "ESB000011", "Failed: malformed request")
		return
	}
	amount, err := b.Transaction.Amount.Int64()
	msisdn := b.Subscriber.MSISDN
	switch {
	case len(msisdn) != 8 || strings.HasPrefix(msisdn, "235") || strings.Trim(msisdn, "0123456789") != "":
		refusal(w, http.StatusOK, "ESB000033", "Invalid MSISDN Length. MSISDN Length should be 8")
		return
	case err != nil || amount <= 0:
		writeJSON(w, http.StatusOK, map[string]any{"status": status{Code: "200", Message: "Invalid amount", ResultCode: "ESB000011", ResponseCode: "DP00800001004"}})
		return
	case msisdn == PhoneUnavailable:
		refusal(w, http.StatusOK, "ESB000011", "Failed: service temporarily unavailable")
		return
	}
	now := s.cfg.Now()
	s.mu.Lock()
	s.prune(now)
	_, dup := s.pushed[b.Transaction.ID]
	s.pushes++
	if !dup {
		s.pushed[b.Transaction.ID] = now.UnixNano()
		if s.cfg.Ledger == nil {
			s.records[b.Transaction.ID] = &Record{ID: b.Transaction.ID, MSISDN: msisdn, Amount: amount, RequestedAt: now}
		}
	}
	s.mu.Unlock()
	if dup {
		refusal(w, http.StatusOK, "ESB000041", "External Transaction ID already exists")
		return
	}
	if st, _, _ := script(msisdn); st != "" && msisdn != PhoneLostCallback && msisdn != PhoneExpired {
		id := b.Transaction.ID
		time.AfterFunc(s.cfg.AnswerDelay, func() { s.callback(id) })
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"data":   map[string]any{"transaction": map[string]string{"id": b.Transaction.ID, "status": "Success."}},
		"status": status{Code: "200", Message: "In process", ResultCode: "ESB000010", ResponseCode: "DP00800001006", Success: true},
	})
}

// script is the scripted answer of a payer number: the transaction status,
// its response code and message; "" when the number has no script.
func script(msisdn string) (st, code, msg string) {
	switch {
	case msisdn == PhoneSuccess, msisdn == PhoneLostCallback:
		return "TS", "DP00800001001", "Transaction is successful"
	case msisdn == PhoneFailure:
		return "TF", "DP00800001007", "Not enough balance"
	case msisdn == PhoneExpired:
		return "TE", "DP00800001029", "Transaction expired"
	case strings.HasPrefix(msisdn, PhoneCodePrefix) && len(msisdn) == 8:
		return "TF", "DP008000010" + msisdn[6:], "Transaction failed"
	}
	return "", "", ""
}

// record returns what the simulator knows of id: the ledger's record when
// there is one (it holds the answers given by hand in any process), else
// its memory's.
func (s *Simulator) record(ctx context.Context, id string) (Record, bool, error) {
	if s.cfg.Ledger != nil {
		if r, ok, err := s.cfg.Ledger.Payment(ctx, id); err != nil || ok {
			return r, ok, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.records[id]; ok {
		return *r, true, nil
	}
	return Record{}, false, nil
}

// state is the transaction status of r now.
func (s *Simulator) state(r Record) (st, code, msg string) {
	if r.Answered {
		if r.Approved {
			return "TS", "DP00800001001", "Transaction is successful"
		}
		return "TF", "DP00800001008", "Refused by the payer"
	}
	if s.cfg.Now().Sub(r.RequestedAt) >= s.cfg.AnswerDelay {
		if st, code, msg := script(r.MSISDN); st != "" {
			return st, code, msg
		}
	}
	return "TIP", "DP00800001006", "Transaction in progress"
}

// AirtelMoneyID is the simulator's id of a payment: derived from ours, so
// that it survives restarts and a refund can find the payment again.
func AirtelMoneyID(id string) string { return "SBX" + strings.ToUpper(hex.EncodeToString([]byte(id))) }

func idOfAirtelMoneyID(amid string) string {
	b, err := hex.DecodeString(strings.TrimPrefix(amid, "SBX"))
	if err != nil || !strings.HasPrefix(amid, "SBX") {
		return ""
	}
	return string(b)
}

func (s *Simulator) handleEnquiry(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	rec, ok, err := s.record(r.Context(), id)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "internal"})
		return
	}
	if !ok {
		writeJSON(w, http.StatusOK, map[string]any{"status": status{Code: "200", Message: "Transaction not found", ResultCode: "ESB000045", ResponseCode: "DP00800001025"}})
		return
	}
	st, code, msg := s.state(rec)
	writeJSON(w, http.StatusOK, map[string]any{
		"data":   map[string]any{"transaction": map[string]string{"airtel_money_id": AirtelMoneyID(id), "id": id, "message": msg, "status": st}},
		"status": status{Code: "200", Message: "SUCCESS", ResultCode: "ESB000010", ResponseCode: code, Success: true},
	})
}

func (s *Simulator) handleRefund(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Transaction struct {
			AirtelMoneyID string `json:"airtel_money_id"`
		} `json:"transaction"`
	}
	json.NewDecoder(r.Body).Decode(&b)
	id := idOfAirtelMoneyID(b.Transaction.AirtelMoneyID)
	rec, ok, err := s.record(r.Context(), id)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "internal"})
		return
	}
	if st, _, _ := s.state(rec); !ok || st != "TS" {
		writeJSON(w, http.StatusOK, map[string]any{"status": status{Code: "200", Message: "Transaction not found or not successful", ResultCode: "ESB000045", ResponseCode: "DP00800001025"}})
		return
	}
	s.mu.Lock()
	already := s.refunded[id]
	s.refunded[id] = true
	s.mu.Unlock()
	if already {
		writeJSON(w, http.StatusOK, map[string]any{"status": status{Code: "200", Message: "Transaction already refunded", ResultCode: "ESB000011"}})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"data":   map[string]any{"transaction": map[string]string{"airtel_money_id": b.Transaction.AirtelMoneyID, "status": "SUCCESS"}},
		"status": status{Code: "200", Message: "SUCCESS", ResultCode: "ESB000010", Success: true},
	})
}

// AnswerPayment implements operator.SandboxPayer: the payer of a pushed
// payment accepts or refuses it; the enquiry says so from now on and the
// callback goes out at once.
func (s *Simulator) AnswerPayment(ctx context.Context, id string, approve bool) error {
	if s.cfg.Ledger != nil {
		if err := s.cfg.Ledger.Answer(ctx, id, approve); err != nil {
			return err
		}
	}
	s.mu.Lock()
	if r, ok := s.records[id]; ok {
		r.Answered, r.Approved = true, approve
	}
	s.mu.Unlock()
	if _, ok, err := s.record(ctx, id); err != nil || !ok {
		return errors.Join(err, errors.New("airtel simulator: no such payment"))
	}
	go s.callback(id)
	return nil
}

// SignedCallback builds a callback body as Airtel sends it, with its hash
// in the body when secret is set. Tests use it to play Airtel.
func SignedCallback(secret []byte, id, statusCode, message, airtelMoneyID string) []byte {
	tx, _ := json.Marshal(map[string]string{"id": id, "message": message, "status_code": statusCode, "airtel_money_id": airtelMoneyID})
	body := map[string]any{"transaction": json.RawMessage(tx)}
	if len(secret) > 0 {
		mac := hmac.New(sha256.New, secret)
		mac.Write(tx)
		body["hash"] = base64.StdEncoding.EncodeToString(mac.Sum(nil))
	}
	out, _ := json.Marshal(body)
	return out
}

// callback posts the payment's current state once; a failure is logged
// and forgotten, as Airtel documents no retry of its callbacks.
func (s *Simulator) callback(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec, ok, err := s.record(ctx, id)
	if err != nil || !ok {
		return
	}
	st, _, msg := s.state(rec)
	url := s.cfg.CallbackURL()
	if url == "" {
		s.cfg.Logger.Info("airtel simulator: callback lost, nobody listens; polling will settle", "id", id)
		return
	}
	body := SignedCallback(s.cfg.CallbackSecret, id, st, msg, AirtelMoneyID(id))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		s.cfg.Logger.Warn("airtel simulator: callback lost; polling will settle", "id", id, "err", err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.cfg.Logger.Warn("airtel simulator: callback refused; polling will settle", "id", id, "status", resp.StatusCode)
	}
}
