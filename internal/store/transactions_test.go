package store_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/jobs"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/store"
)

// newTransactions returns the transaction store of db with one merchant,
// and a PENDING transaction maker for it. Jobs go through a real, unstarted
// River client, so they are inserted as in production and never run.
func newTransactions(t *testing.T, db *store.DB) (*store.Transactions, func(ref string, now time.Time) *payment.Transaction) {
	t.Helper()
	ctx := t.Context()
	sqlite := db.Dialect == store.SQLite
	if err := jobs.Migrate(ctx, db.DB, sqlite); err != nil {
		t.Fatal(err)
	}
	var pg *jobs.Postgres
	if !sqlite {
		pool, err := db.OpenPool(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		pg = &jobs.Postgres{Pool: pool, ConnOf: db.ConnOf}
	}
	client, err := jobs.NewClient(db.DB, pg, &jobs.Handlers{}, jobs.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	m, err := store.NewMerchants(db).Create(ctx, "Shop", uuid.NewString()+"@example.td", "correct horse battery", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	txs := store.NewTransactions(db, client)
	n := 0
	create := func(ref string, now time.Time) *payment.Transaction {
		t.Helper()
		n++
		tr := &payment.Transaction{
			ID: uuid.Must(uuid.NewV7()).String(), MerchantID: m.ID, Reference: ref,
			InternalRef: "SERVICE-T" + uuid.NewString()[:7], Amount: 1500, Currency: "XAF",
			Operator: payment.OperatorAirtel, PhoneNumber: "+23566000000", Status: payment.StatusPending,
			CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(5 * time.Minute), PushInFlight: true,
		}
		if err := txs.CreateTransaction(ctx, tr); err != nil {
			t.Fatalf("create %s: %v", ref, err)
		}
		return tr
	}
	return txs, create
}

// jobsOf counts the River jobs queued for a transaction.
func jobsOf(t *testing.T, db *store.DB, id string) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM river_job WHERE args->>'transaction_id' = $1`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPushInFlight: a transaction whose push is in flight is readable but
// not listed; a refused push deletes it only while it is in flight, so one
// judged taken (PushTaken) or settled is never deleted.
func TestPushInFlight(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		txs, create := newTransactions(t, db)
		now := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
		tr := create("order-1", now)

		got, err := txs.Transaction(ctx, tr.MerchantID, tr.ID)
		if err != nil || !got.PushInFlight {
			t.Fatalf("in flight: %+v %v", got, err)
		}
		page, err := txs.ListTransactions(ctx, tr.MerchantID, payment.ListFilter{Page: 1, PerPage: 10})
		if err != nil || page.Total != 0 || len(page.Transactions) != 0 {
			t.Fatalf("a transaction whose push is in flight was listed: %+v %v", page, err)
		}
		dup := *tr
		dup.ID, dup.InternalRef = uuid.Must(uuid.NewV7()).String(), "SERVICE-DUP00001"
		if err := txs.CreateTransaction(ctx, &dup); payment.ErrorCode(err) != payment.EDUPLICATE {
			t.Fatalf("duplicate reference: %v", err)
		} else if e, _ := errors.AsType[*payment.Error](err); e.ExistingTransactionID != tr.ID {
			t.Fatalf("duplicate names %q, want %q", e.ExistingTransactionID, tr.ID)
		}
		// The duplicate's jobs (inserted first on PostgreSQL) went with its
		// rolled-back transaction.
		if got, dupJobs := jobsOf(t, db, tr.ID), jobsOf(t, db, dup.ID); got != 2 || dupJobs != 0 {
			t.Fatalf("lifecycle jobs: %d for the transaction, %d for its duplicate; want 2 and 0", got, dupJobs)
		}

		// Refused: deleted, and the reference is free again.
		if deleted, err := txs.DeleteTransaction(ctx, tr.MerchantID, tr.ID); err != nil || !deleted {
			t.Fatalf("delete in flight: %v %v", deleted, err)
		}
		if _, err := txs.Transaction(ctx, tr.MerchantID, tr.ID); !errors.Is(err, payment.ErrNotFound) {
			t.Fatalf("after delete: %v", err)
		}
		if err := txs.CreateTransaction(ctx, &dup); err != nil {
			t.Fatalf("reference not free after the delete: %v", err)
		}

		// Taken: listed, and a late refusal no longer deletes it.
		if err := txs.PushTaken(ctx, dup.MerchantID, dup.ID, "", payment.TransactionEvent{Kind: payment.EventPushAccepted, At: now}); err != nil {
			t.Fatal(err)
		}
		if deleted, err := txs.DeleteTransaction(ctx, dup.MerchantID, dup.ID); err != nil || deleted {
			t.Fatalf("a taken push was deleted: %v %v", deleted, err)
		}
		page, err = txs.ListTransactions(ctx, dup.MerchantID, payment.ListFilter{Page: 1, PerPage: 10})
		if err != nil || page.Total != 1 || page.Transactions[0].ID != dup.ID || page.Transactions[0].PushInFlight {
			t.Fatalf("a taken push is not listed: %+v %v", page, err)
		}

		// Settled while in flight (a callback faster than the push's
		// answer): no longer in flight, never deleted.
		fast := create("order-2", now)
		if _, changed, err := txs.Settle(ctx, payment.Settlement{MerchantID: fast.MerchantID, TransactionID: fast.ID,
			To: payment.StatusSuccess, At: now.Add(time.Second), Source: payment.SourceCallback, Reconcile: true}); err != nil || !changed {
			t.Fatalf("settle in flight: %v %v", changed, err)
		}
		if deleted, _ := txs.DeleteTransaction(ctx, fast.MerchantID, fast.ID); deleted {
			t.Fatal("a settled transaction was deleted")
		}
		if got, _ := txs.Transaction(ctx, fast.MerchantID, fast.ID); got == nil || got.PushInFlight || got.Status != payment.StatusSuccess {
			t.Fatalf("settled in flight: %+v", got)
		}
	})
}

// TestSettleNeverExpiresEarly: the conditional update refuses EXPIRED
// before expires_at, whoever asks, records no reconciliation case for it,
// and takes it from expires_at on; other outcomes are not held.
func TestSettleNeverExpiresEarly(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		txs, create := newTransactions(t, db)
		now := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
		tr := create("order-1", now)
		settle := func(tr *payment.Transaction, to payment.Status, at time.Time) (*payment.Transaction, bool) {
			t.Helper()
			got, changed, err := txs.Settle(ctx, payment.Settlement{MerchantID: tr.MerchantID, TransactionID: tr.ID,
				To: to, At: at, Source: payment.SourceCallback, Detail: "TE", Reconcile: true})
			if err != nil {
				t.Fatal(err)
			}
			return got, changed
		}
		for _, early := range []time.Duration{55 * time.Second, time.Microsecond} {
			if got, changed := settle(tr, payment.StatusExpired, tr.ExpiresAt.Add(-early)); changed || got.Status != payment.StatusPending {
				t.Fatalf("EXPIRED %s before expires_at: changed=%v status=%s", early, changed, got.Status)
			}
		}
		if cases, err := store.NewReconciliationCases(db).List(ctx); err != nil || len(cases) != 0 {
			t.Fatalf("an early EXPIRED made cases: %v %v", cases, err)
		}
		if got, changed := settle(tr, payment.StatusExpired, tr.ExpiresAt); !changed || got.Status != payment.StatusExpired {
			t.Fatalf("EXPIRED at expires_at: changed=%v status=%s", changed, got.Status)
		}
		other := create("order-2", now)
		if got, changed := settle(other, payment.StatusFailed, now.Add(time.Second)); !changed || got.Status != payment.StatusFailed {
			t.Fatalf("FAILED before expires_at: changed=%v status=%s", changed, got.Status)
		}
	})
}

// TestOnlyCanonicalIDs: every store lookup by id takes only the canonical
// lower-case form. PostgreSQL's uuid type would find upper-case, braced or
// dash-less spellings and fail on urn:uuid: (a 500), while SQLite compares
// text; both now answer "not found" for all of them alike.
func TestOnlyCanonicalIDs(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		txs, create := newTransactions(t, db)
		tr := create("order-ids", time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC))
		if got, err := txs.Transaction(ctx, tr.MerchantID, tr.ID); err != nil || got.ID != tr.ID {
			t.Fatalf("canonical id: %v %v", got, err)
		}
		for _, id := range []string{
			strings.ToUpper(tr.ID), "{" + tr.ID + "}", "urn:uuid:" + tr.ID, strings.ReplaceAll(tr.ID, "-", ""),
		} {
			if _, err := txs.Transaction(ctx, tr.MerchantID, id); !errors.Is(err, payment.ErrNotFound) {
				t.Errorf("Transaction(%q): %v, want not found", id, err)
			}
			if _, err := txs.MerchantOf(ctx, id); !errors.Is(err, payment.ErrNotFound) {
				t.Errorf("MerchantOf(%q): %v, want not found", id, err)
			}
			if ok, err := store.NewMerchants(db).Exists(ctx, id); ok || err != nil {
				t.Errorf("Merchants.Exists(%q): %v %v", id, ok, err)
			}
		}
	})
}
