package app

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/momopay/momopay/internal/operator"
	"github.com/momopay/momopay/internal/operator/airtel"
	"github.com/momopay/momopay/internal/operator/airtel/airtelsim"
	"github.com/momopay/momopay/internal/operator/moov"
	"github.com/momopay/momopay/internal/operator/sandbox"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/store"
)

// operatorSet is the operators a process talks to: the same adapters in
// both modes, against the real operators (live) or against simulators of
// their protocols served on a loopback listener of this process (sandbox).
type operatorSet struct {
	operators map[payment.Operator]operator.Operator
	callbacks map[payment.Operator]operator.CallbackReader
	// payers answer sandbox payments by hand (the simulators).
	payers map[payment.Operator]operator.SandboxPayer
	// stop ends the simulators' listener.
	stop func()
	// listeners are the simulators' addresses (sandbox), which webhook
	// deliveries must not reach, as they must not reach the API's.
	listeners []netip.AddrPort
}

func (s *operatorSet) close() {
	if s != nil && s.stop != nil {
		s.stop()
	}
}

// The environment of live mode, per operator: all of an operator's
// required variables, or none (the operator is then unavailable and its
// payments are refused with 422).
var (
	airtelRequired = []string{"MOMOPAY_AIRTEL_BASE_URL", "MOMOPAY_AIRTEL_CLIENT_ID", "MOMOPAY_AIRTEL_CLIENT_SECRET"}
	airtelOptional = "MOMOPAY_AIRTEL_CALLBACK_SECRET"
)

// buildOperators wires the operators of the configured mode.
func (a *App) buildOperators() (*operatorSet, error) {
	if a.cfg.Mode == ModeLive {
		return a.liveOperators()
	}
	return a.sandboxOperators()
}

// liveOperators builds the adapters of the operators configured in the
// environment, one circuit breaker per operator. A half-configured
// operator is an error naming every missing variable; serving with none
// configured is one too.
func (a *App) liveOperators() (*operatorSet, error) {
	env := a.cfg.Getenv
	set := &operatorSet{operators: map[payment.Operator]operator.Operator{}, callbacks: map[payment.Operator]operator.CallbackReader{}}
	var missing, unconfigured []string
	var problems []error // each operator's, all named at once
	present := func(names []string) (have, lack []string) {
		for _, n := range names {
			if strings.TrimSpace(env(n)) == "" {
				lack = append(lack, n)
			} else {
				have = append(have, n)
			}
		}
		return have, lack
	}
	if have, lack := present(airtelRequired); len(have) == 0 {
		unconfigured = append(unconfigured, "AIRTEL ("+strings.Join(airtelRequired, ", ")+")")
	} else if len(lack) > 0 {
		missing = append(missing, lack...)
	} else {
		base := strings.TrimRight(env("MOMOPAY_AIRTEL_BASE_URL"), "/")
		if err := liveOperatorURL("MOMOPAY_AIRTEL_BASE_URL", base, "https://openapi.airtel.africa"); err != nil {
			problems = append(problems, err)
		} else {
			a.liveAirtel(set, base)
		}
	}
	moovMissing, moovConfigured, err := a.liveMoov(set)
	if err != nil {
		problems = append(problems, err)
	}
	missing = append(missing, moovMissing...)
	if !moovConfigured && len(moovMissing) == 0 && err == nil {
		unconfigured = append(unconfigured, "MOOV ("+strings.Join(moovRequired, ", ")+")")
	}
	if len(missing) > 0 {
		problems = append(problems, fmt.Errorf("live mode: these environment variables are missing: %s", strings.Join(missing, ", ")))
	}
	if len(problems) > 0 {
		set.close()
		return nil, errors.Join(problems...)
	}
	if len(set.operators) == 0 && a.cfg.RequireOperator {
		return nil, fmt.Errorf("live mode needs at least one operator: set the environment variables of %s", strings.Join(unconfigured, " or "))
	}
	for _, u := range unconfigured {
		if a.cfg.RequireOperator {
			a.cfg.Logger.Warn("operator not configured: its payments are refused with 422", "operator", u)
		}
	}
	return set, nil
}

// liveAirtel adds the Airtel adapter for base to set, from the environment
// liveOperators found complete.
func (a *App) liveAirtel(set *operatorSet, base string) {
	env := a.cfg.Getenv
	ad := airtel.New(airtel.Config{
		BaseURL: base, ClientID: env("MOMOPAY_AIRTEL_CLIENT_ID"), ClientSecret: env("MOMOPAY_AIRTEL_CLIENT_SECRET"),
		CallbackSecret: []byte(env(airtelOptional)), Now: a.cfg.Now, Logger: a.cfg.Logger,
	})
	if env(airtelOptional) == "" && a.cfg.RequireOperator {
		// Said by serve and config check only: the administrative
		// commands read no callbacks.
		a.cfg.Logger.Warn(airtelOptional + " is not set: Airtel callbacks cannot be authenticated, so each one only triggers a status enquiry")
	}
	set.operators[payment.OperatorAirtel] = operator.WithBreaker("AIRTEL", ad, operator.DefaultBreakerSettings)
	set.callbacks[payment.OperatorAirtel] = ad
}

// liveOperatorURL refuses an operator endpoint that is not https in live
// mode. Every request to it carries the operator's credentials (Airtel's
// client secret and bearer tokens, Moov's token) and every answer settles
// payments: over plain http anyone on the path could read the first and
// forge the second. An operator whose certificate comes from a private
// authority is trusted by adding that authority to SSL_CERT_FILE
// (docs/going-live.md). The sandbox's simulators, on this process's own
// loopback listener, are the only plain-http operators.
func liveOperatorURL(name, raw, example string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("%s %q is not an https URL, e.g. %s: live mode sends the operator's credentials and reads payments' outcomes only over https",
			name, store.Redact(raw), example)
	}
	return nil
}

// sandboxOperators runs the real Airtel and Moov adapters against
// simulators of their protocols served on a loopback listener of this
// process, each behind one circuit breaker per merchant (the sandbox's
// outages are one merchant's test number). The simulators keep their
// records and the payer's answers by hand in the database, so every
// process of one sandbox agrees and payments survive restarts. The Airtel
// simulator calls this process back once it serves, signing with a secret
// drawn per process: in a sandbox with several instances, a callback
// reaching another one is refused and polling settles the payment, as with
// a lost callback.
func (a *App) sandboxOperators() (*operatorSet, error) {
	a.callbackBase.Store("")
	secret := []byte(rand.Text())
	a.SandboxCallbackSecret = secret
	set := &operatorSet{
		operators: map[payment.Operator]operator.Operator{}, callbacks: map[payment.Operator]operator.CallbackReader{},
		payers: map[payment.Operator]operator.SandboxPayer{},
	}
	breaker := operator.DefaultBreakerSettings
	breaker.PerMerchant = true

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("sandbox: listen for the operator simulators: %w", err)
	}
	clientID, clientSecret := rand.Text(), rand.Text()
	ledger := simLedger{store.NewSandboxAnswers(a.DB), a.cfg.Now}
	sim := airtelsim.New(airtelsim.Config{
		ClientID: clientID, ClientSecret: clientSecret, CallbackSecret: secret,
		CallbackURL: func() string {
			if base := a.callbackBase.Load().(string); base != "" {
				return base + "airtel"
			}
			return ""
		},
		AnswerDelay: sandbox.AnswerDelay,
		Ledger:      ledger,
		Now:         a.cfg.Now, Logger: a.cfg.Logger,
	})
	moovToken := rand.Text()
	msim := moov.NewSimulator(moov.SimulatorConfig{
		Token: moovToken, AnswerDelay: sandbox.AnswerDelay, Ledger: moovLedger{ledger}, Now: a.cfg.Now, Logger: a.cfg.Logger,
	})
	mux := http.NewServeMux()
	mux.Handle("/airtel/", http.StripPrefix("/airtel", sim.Handler()))
	mux.Handle("/moov/", http.StripPrefix("/moov", msim))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	set.stop = func() { srv.Close() }
	set.listeners = []netip.AddrPort{ln.Addr().(*net.TCPAddr).AddrPort()}
	base := "http://" + ln.Addr().String()
	a.cfg.Logger.Info("sandbox operator simulators listening", "addr", ln.Addr().String())

	ad := airtel.New(airtel.Config{
		BaseURL: base + "/airtel", ClientID: clientID, ClientSecret: clientSecret, CallbackSecret: secret,
		RetryAfter: sandbox.UnavailableRetryAfter, Now: a.cfg.Now, Logger: a.cfg.Logger,
	})
	set.operators[payment.OperatorAirtel] = operator.WithBreaker("AIRTEL", ad, breaker)
	set.callbacks[payment.OperatorAirtel] = ad
	set.payers[payment.OperatorAirtel] = sim

	// Moov: SOAP, no callbacks; its payments are settled by polling only.
	mop, err := moov.New(moov.Config{URL: base + "/moov/", Token: moovToken}, nil, a.cfg.Now, a.cfg.Logger)
	if err != nil {
		srv.Close()
		return nil, err
	}
	set.operators[payment.OperatorMoov] = operator.WithBreaker("MOOV", mop, breaker)
	set.payers[payment.OperatorMoov] = msim
	return set, nil
}

// simLedger keeps the Airtel simulator's records in momopay's database:
// the payment as stored, and the payer's answer by hand.
type simLedger struct {
	answers *store.SandboxAnswers
	now     func() time.Time
}

func (l simLedger) Payment(ctx context.Context, id string) (airtelsim.Record, bool, error) {
	p, ok, err := l.answers.Payment(ctx, id)
	if err != nil || !ok {
		return airtelsim.Record{}, ok, err
	}
	return airtelsim.Record{
		ID: p.InternalRef, MSISDN: strings.TrimPrefix(p.PhoneNumber, "+235"), Amount: p.Amount,
		RequestedAt: p.RequestedAt, Answered: p.Answered, Approved: p.Approved,
	}, true, nil
}

func (l simLedger) Answer(ctx context.Context, id string, approve bool) error {
	return l.answers.Answer(ctx, id, approve, l.now())
}

// ErrNotSandbox refuses answering a payment by hand outside sandbox mode.
var ErrNotSandbox = errors.New("only sandbox payments can be answered by hand: this service runs in live mode")

// AnswerSandboxPayment plays the payer of one of the merchant's sandbox
// payments: approve accepts it, otherwise it is refused. The operator's
// simulator takes the answer (and sends its callback, as the operator
// would), then the service asks the operator at once, so the returned
// transaction already shows the outcome. It went through the one
// transition: a final state stays (changed false), and a contradicting
// answer is kept as a reconciliation case. Errors: ErrNotSandbox,
// payment.ErrNotFound.
func (a *App) AnswerSandboxPayment(ctx context.Context, merchantID, txID string, approve bool) (*payment.Transaction, bool, error) {
	if a.cfg.Mode != ModeSandbox {
		return nil, false, ErrNotSandbox
	}
	t, err := a.Transactions.Transaction(ctx, merchantID, txID)
	if err != nil {
		return nil, false, err
	}
	payer, ok := a.ops.payers[t.Operator]
	if !ok {
		return nil, false, fmt.Errorf("no %s simulator in this process", t.Operator)
	}
	if err := payer.AnswerPayment(ctx, t.InternalRef, approve); err != nil {
		return nil, false, err
	}
	return a.Payments.Enquire(ctx, merchantID, txID, payment.SourceSandbox)
}
