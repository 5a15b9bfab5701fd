package store

import (
	"context"
	"database/sql"
	"errors"
)

// ErrServedLive is a database that has served in live mode, opened in
// sandbox mode.
var ErrServedLive = errors.New("this database has served in live mode: run with --mode live (or MOMOPAY_MODE=live); " +
	"in sandbox mode the simulators would answer its real payments")

// CheckMode keeps the mode a database serves in: opened live, it is marked
// live for good; opened in sandbox mode once marked, it is refused with
// ErrServedLive. An administrative command run against the production
// database without MOMOPAY_MODE would otherwise default to the sandbox,
// where "sandbox confirm" settles a real payment SUCCESS with no money
// taken, and a refund goes to the simulator.
func (db *DB) CheckMode(ctx context.Context, live bool) error {
	if live {
		_, err := db.ExecContext(ctx, `INSERT INTO service_settings (name, value) VALUES ('mode', 'live') ON CONFLICT (name) DO NOTHING`)
		return err
	}
	var mode string
	err := db.QueryRowContext(ctx, `SELECT value FROM service_settings WHERE name = 'mode'`).Scan(&mode)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return err
	case mode == "live":
		return ErrServedLive
	}
	return nil
}
