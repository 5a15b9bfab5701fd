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

// DemoMerchantEmail is the sign-in of the merchant a sandbox serve creates
// on its first start, and prints the password and API key of.
const DemoMerchantEmail = "demo@momopay.local"

// ErrServedSandbox is a database that has served in sandbox mode, opened
// in live mode.
var ErrServedSandbox = errors.New("this database has served in sandbox mode: its demo merchant, whose password and API key were printed in clear, " +
	"and its simulated payments would carry into live mode; give live mode a database of its own (momopay migrate --db NEW-DATABASE)")

// CheckMode keeps the mode a database serves in. Opened live, it is marked
// live for good; opened in sandbox mode once marked, it is refused with
// ErrServedLive. An administrative command run against the production
// database without MOMOPAY_MODE would otherwise default to the sandbox,
// where "sandbox confirm" settles a real payment SUCCESS with no money
// taken, and a refund goes to the simulator.
//
// The other way round, a database that served the sandbox (MarkSandbox)
// is refused in live mode with ErrServedSandbox: its demo merchant's key
// would take real money. So is one with no mark that holds the demo
// merchant, which only a sandbox serve creates: a sandbox served by a
// build from before the mark. (Payments without a mark are no sign: live
// databases went unmarked for a while too.)
func (db *DB) CheckMode(ctx context.Context, live bool) error {
	if err := db.ModeRefusal(ctx, live); err != nil || !live {
		return err
	}
	return db.claimMode(ctx, "live")
}

// ModeRefusal is CheckMode's refusal without its mark: why the database
// would be refused in live mode (live) or sandbox mode, or nil. config
// check asks it, and must leave the database as it found it.
func (db *DB) ModeRefusal(ctx context.Context, live bool) error {
	mode, err := db.mode(ctx)
	switch {
	case err != nil:
		return err
	case !live && mode == "live":
		return ErrServedLive
	case live && mode == "sandbox":
		return ErrServedSandbox
	case live && mode == "":
		var demo bool
		if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM merchants WHERE email = $1)`, DemoMerchantEmail).Scan(&demo); err != nil {
			return err
		}
		if demo {
			return ErrServedSandbox
		}
	}
	return nil
}

// MarkSandbox records that the database serves in sandbox mode (serve
// calls it before it takes a request), so that live mode refuses it later.
func (db *DB) MarkSandbox(ctx context.Context) error {
	return db.claimMode(ctx, "sandbox")
}

// claimMode marks the database with mode unless it has one, and refuses it
// when the mark it has is the other mode: of a sandbox and a live serve
// started together on a new database, one wins the mark and the other
// stops.
func (db *DB) claimMode(ctx context.Context, mode string) error {
	if _, err := db.ExecContext(ctx, `INSERT INTO service_settings (name, value) VALUES ('mode', $1) ON CONFLICT (name) DO NOTHING`, mode); err != nil {
		return err
	}
	got, err := db.mode(ctx)
	switch {
	case err != nil:
		return err
	case got == mode:
		return nil
	case got == "live":
		return ErrServedLive
	default:
		return ErrServedSandbox
	}
}

// mode is the database's mark: "live", "sandbox" or "" (none yet).
func (db *DB) mode(ctx context.Context) (string, error) {
	var mode string
	err := db.QueryRowContext(ctx, `SELECT value FROM service_settings WHERE name = 'mode'`).Scan(&mode)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return mode, err
}
