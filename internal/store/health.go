package store

import (
	"context"
	"fmt"
	"time"

	"github.com/momopay/momopay/internal/payment"
)

// SchemaCurrent reports an error when the database is unreachable or its
// schema is behind this build's migrations; the admin listener's /readyz
// asks it. It takes no migration lock, so it never waits on a process that
// is migrating.
func (db *DB) SchemaCurrent(ctx context.Context) error {
	p, err := db.migrationProvider()
	if err != nil {
		return err
	}
	current, target, err := p.GetVersions(ctx)
	if err != nil {
		return fmt.Errorf("read the schema version: %w", err)
	}
	if current < target {
		return fmt.Errorf("schema at version %d, this build needs %d: run momopay migrate", current, target)
	}
	return nil
}

// PendingCounts counts every merchant's PENDING transactions and those of
// them still PENDING more than payment.SettleGrace after expires_at, which
// the expiry check should have ended by then: under load some payments are
// always a moment past expires_at, and counting those would make the
// gauge's alert fire on a healthy service. Both read the partial index of
// migration 00005, which holds PENDING rows only: the cost follows the
// payments in flight, never the whole history.
func (s *Transactions) PendingCounts(ctx context.Context, now time.Time) (pending, overdue int64, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(CASE WHEN expires_at < $1 THEN 1 ELSE 0 END), 0)
		FROM transactions WHERE status = 'PENDING'`, s.db.Time(now.Add(-payment.SettleGrace))).Scan(&pending, &overdue)
	return pending, overdue, err
}
