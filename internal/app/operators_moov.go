package app

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"time"

	"github.com/momopay/momopay/internal/operator"
	"github.com/momopay/momopay/internal/operator/moov"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/store"
)

// moovRequired are the environment variables of Moov Money in live mode
// (moov.EnvToken may replace the last three).
var moovRequired = []string{moov.EnvURL, moov.EnvUsername, moov.EnvPassword, moov.EnvKey}

// liveMoov adds the Moov adapter to set when the environment configures
// it; missing lists the variables of a half-configured Moov.
func (a *App) liveMoov(set *operatorSet) (missing []string, configured bool, err error) {
	cfg, err := moov.ConfigFromEnv(a.cfg.Getenv)
	if errors.Is(err, moov.ErrNotConfigured) {
		return nil, false, nil
	}
	if me, ok := errors.AsType[*moov.MissingEnvError](err); ok {
		return me.Names, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	ad, err := moov.New(cfg, nil, a.cfg.Now, a.cfg.Logger)
	if err != nil {
		return nil, false, err
	}
	set.operators[payment.OperatorMoov] = operator.WithBreaker("MOOV", ad, operator.DefaultBreakerSettings)
	return nil, true, nil
}

// sandboxMoov runs the real Moov adapter against the Moov simulator,
// served under /moov/ on the simulators' loopback listener at base. Moov
// has no callbacks: its payments settle by polling.
func (a *App) sandboxMoov(set *operatorSet, mux *http.ServeMux, base string, breaker operator.BreakerSettings) error {
	// Credentials drawn per process, so the token goes through the same
	// building as in live mode.
	cfg := moov.Config{URL: base + "/moov/", Username: "sandbox", Password: rand.Text(), Key: (rand.Text() + rand.Text())[:32]}
	token, err := moov.Token(cfg.Username, cfg.Password, cfg.Key)
	if err != nil {
		return err
	}
	sim := moov.NewSimulator(moov.SimulatorConfig{
		Token: token, Ledger: moovLedger{store.NewSandboxAnswers(a.DB), a.cfg.Now},
		Now: a.cfg.Now, Logger: a.cfg.Logger,
	})
	mux.Handle("/moov/", sim)
	ad, err := moov.New(cfg, nil, a.cfg.Now, a.cfg.Logger)
	if err != nil {
		return err
	}
	set.operators[payment.OperatorMoov] = operator.WithBreaker("MOOV", ad, breaker)
	set.payers[payment.OperatorMoov] = sim
	return nil
}

// moovLedger keeps the Moov simulator's records in momopay's database:
// the payment as stored, and the payer's answer by hand.
type moovLedger struct {
	answers *store.SandboxAnswers
	now     func() time.Time
}

func (l moovLedger) Payment(ctx context.Context, ref string) (moov.Record, bool, error) {
	p, ok, err := l.answers.Payment(ctx, ref)
	if err != nil || !ok {
		return moov.Record{}, ok, err
	}
	return moov.Record{Ref: p.InternalRef, PhoneNumber: p.PhoneNumber, Amount: p.Amount,
		RequestedAt: p.RequestedAt, Answered: p.Answered, Approved: p.Approved}, true, nil
}

func (l moovLedger) Answer(ctx context.Context, ref string, approve bool) error {
	return l.answers.Answer(ctx, ref, approve, l.now())
}
