package store_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/store"
)

// TestReadsDoNotWaitForTheWriter holds a write transaction open and reads
// a payment and a list page meanwhile: on SQLite, whose writes go through
// one connection, the reads must take their own (a get or a list queued
// behind every write was SQLite's p99), and they see what was committed,
// not the open transaction's change.
func TestReadsDoNotWaitForTheWriter(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		txs, create := newTransactions(t, db)
		now := time.Now().UTC().Truncate(time.Microsecond)
		tr := create("held-1", now)
		if err := txs.PushTaken(ctx, tr.MerchantID, tr.ID, "", payment.TransactionEvent{Kind: payment.EventPushAccepted, At: now}); err != nil {
			t.Fatal(err)
		}

		holding, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		go func() {
			done <- db.InTx(ctx, func(tx *sql.Tx) error {
				if _, err := tx.ExecContext(ctx, `UPDATE transactions SET status = 'FAILED' WHERE id = $1`, tr.ID); err != nil {
					return err
				}
				close(holding)
				<-release
				return nil
			})
		}()
		select {
		case <-holding:
		case err := <-done:
			t.Fatal(err)
		}
		read, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		got, err := txs.Transaction(read, tr.MerchantID, tr.ID)
		if err != nil {
			t.Fatalf("read while a write transaction is open: %v", err)
		}
		if got.Status != payment.StatusPending {
			t.Errorf("the read saw the open transaction's status %s", got.Status)
		}
		page, err := txs.ListTransactions(read, tr.MerchantID, payment.ListFilter{Page: 1, PerPage: 20})
		if err != nil {
			t.Fatalf("list while a write transaction is open: %v", err)
		}
		if page.Total != 1 || len(page.Transactions) != 1 {
			t.Errorf("list: total %d, %d rows; want 1 and 1", page.Total, len(page.Transactions))
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		// Committed now: a read sees it at once.
		if got, err := txs.Transaction(ctx, tr.MerchantID, tr.ID); err != nil || got.Status != payment.StatusFailed {
			t.Errorf("after the commit the read says %v (%v), want FAILED", got, err)
		}
	})
}
