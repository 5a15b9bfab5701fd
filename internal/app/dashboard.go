package app

import (
	"context"
	"crypto/rand"
	"errors"
	"time"

	"github.com/momopay/momopay/internal/api"
	"github.com/momopay/momopay/internal/dashboard"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/store"
	"github.com/momopay/momopay/internal/webhook"
)

// wireDashboard builds the dashboard on the stores. Its session secret is
// the configured one (live mode requires it) or, in sandbox mode without
// one, the one kept in the database, so that restarts and several
// instances share it.
func (a *App) wireDashboard(ctx context.Context, throttles api.Throttles) error {
	a.Users = store.NewUsers(a.DB)
	a.Sessions = store.NewSessions(a.DB)
	a.AuditLog = store.NewAuditLog(a.DB)
	secret := a.cfg.SessionSecret
	switch {
	case len(secret) == 0 && a.cfg.Mode == ModeLive:
		// An administrative command (serve refuses live mode without a
		// secret): the dashboard is wired but never serves, so a throw-away
		// secret signs nothing anyone sees.
		secret = []byte(rand.Text() + rand.Text())
	case len(secret) == 0:
		var err error
		if secret, err = a.Sessions.SessionSecret(ctx); err != nil {
			return err
		}
	}
	d, err := dashboard.New(dashboard.Config{
		Accounts: a.Users, Sessions: a.Sessions, AuditLog: a.AuditLog, Team: a.Users,
		Keys: dashboardKeys{a.APIKeys}, Figures: dashboardFigures{store.NewFigures(a.DB), a.Webhooks, a.Cases},
		Payments: a.Payments, Records: a.Transactions, Webhooks: a.Webhooks, Cases: a.Cases, Refunds: a.Refunds,
		Phone: &sandboxPhone{txs: a.Transactions, payments: a.Payments, answer: a.AnswerSandboxPayment,
			answers: store.NewSandboxAnswers(a.DB), now: a.cfg.Now},
		Secret: secret, Sandbox: a.cfg.Mode == ModeSandbox, Now: a.cfg.Now, Logger: a.cfg.Logger,
		NoteMerchant: api.NoteMerchant, Throttles: throttles,
	})
	if err != nil {
		return err
	}
	a.Dashboard = d
	return nil
}

// dashboardKeys gives the dashboard the API keys in its own terms.
type dashboardKeys struct{ keys *store.APIKeys }

func (k dashboardKeys) List(ctx context.Context, merchantID string) ([]dashboard.APIKey, error) {
	keys, err := k.keys.List(ctx, merchantID)
	if err != nil {
		return nil, err
	}
	out := make([]dashboard.APIKey, len(keys))
	for i, key := range keys {
		out[i] = dashboardKey(key)
	}
	return out, nil
}

func (k dashboardKeys) Create(ctx context.Context, merchantID, request string, now time.Time) (*dashboard.APIKey, string, error) {
	rec, key, err := k.keys.CreateOnce(ctx, merchantID, request, now)
	switch {
	case errors.Is(err, store.ErrKeyRequestDone):
		err = nil // key is "": the first Create showed it
	case errors.Is(err, store.ErrTooManyKeys):
		err = dashboard.ErrTooManyKeys
	}
	if err != nil {
		return nil, "", err
	}
	out := dashboardKey(*rec)
	return &out, key, nil
}

func (k dashboardKeys) Revoke(ctx context.Context, merchantID, keyID string, now time.Time) (bool, error) {
	revoked, err := k.keys.Revoke(ctx, merchantID, keyID, now)
	if err == store.ErrKeyNotFound {
		return false, &payment.Error{Code: payment.ENOTFOUND, Message: "API key not found"}
	}
	return revoked, err
}

func dashboardKey(k store.APIKey) dashboard.APIKey {
	return dashboard.APIKey{ID: k.ID, Prefix: k.Prefix, CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt, RevokedAt: k.RevokedAt}
}

// dashboardFigures gives the overview the store's totals in its terms,
// and its alerts from the packages that own those tables.
type dashboardFigures struct {
	*store.Figures
	webhooks *webhook.Service
	cases    *store.ReconciliationCases
}

// Alerts counts what needs a person: undelivered webhook deliveries and
// open reconciliation cases.
func (f dashboardFigures) Alerts(ctx context.Context, merchantID string) (undelivered, openCases int64, err error) {
	if undelivered, err = f.webhooks.UndeliveredOf(ctx, merchantID); err != nil {
		return 0, 0, err
	}
	n, err := f.cases.CountOpen(ctx, merchantID)
	return undelivered, int64(n), err
}

func (f dashboardFigures) DailyTotals(ctx context.Context, merchantID, first, last string) ([]dashboard.DailyTotal, error) {
	totals, err := f.Figures.DailyTotals(ctx, merchantID, first, last)
	if err != nil {
		return nil, err
	}
	out := make([]dashboard.DailyTotal, len(totals))
	for i, t := range totals {
		out[i] = dashboard.DailyTotal(t)
	}
	return out, nil
}
