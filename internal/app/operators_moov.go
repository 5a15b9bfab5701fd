package app

import (
	"context"
	"errors"

	"github.com/momopay/momopay/internal/operator"
	"github.com/momopay/momopay/internal/operator/moov"
	"github.com/momopay/momopay/internal/payment"
)

// moovRequired are the environment variables of Moov Money in live mode
// (MOMOPAY_MOOV_TOKEN may replace the last three: see moov.ConfigFromEnv).
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
	if err := liveOperatorURL(moov.EnvURL, cfg.URL, "https://HOST/PATH/MerchantService"); err != nil {
		return nil, false, err
	}
	op, err := moov.New(cfg, nil, a.cfg.Now, a.cfg.Logger)
	if err != nil {
		return nil, false, err
	}
	set.operators[payment.OperatorMoov] = operator.WithBreaker("MOOV", op, operator.DefaultBreakerSettings)
	return nil, true, nil
}

// moovLedger keeps the Moov simulator's records in momopay's database, as
// simLedger does for Airtel's.
type moovLedger struct{ simLedger }

func (l moovLedger) Payment(ctx context.Context, ref string) (moov.Record, bool, error) {
	p, ok, err := l.answers.Payment(ctx, ref)
	if err != nil || !ok {
		return moov.Record{}, ok, err
	}
	return moov.Record{Ref: p.InternalRef, PhoneNumber: p.PhoneNumber, Amount: p.Amount, RequestedAt: p.RequestedAt,
		Answered: p.Answered, Approved: p.Approved}, true, nil
}
