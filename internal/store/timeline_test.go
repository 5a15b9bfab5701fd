package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/store"
)

// TestTimeline: each change writes its step in its own transaction: the
// creation, the push taken (once, however often it is reported), answers
// heard, the final state, and a late contradicting answer with its case. A
// refused push takes its steps with it, and another merchant reads nothing.
func TestTimeline(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		txs, create := newTransactions(t, db)
		now := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
		tr := create("order-1", now)
		step := func(kind payment.EventKind, at time.Time) payment.TransactionEvent {
			return payment.TransactionEvent{Kind: kind, At: at, Status: payment.StatusPending}
		}
		if err := txs.PushTaken(ctx, tr.MerchantID, tr.ID, "72024103000000009", step(payment.EventPushAccepted, now.Add(time.Second))); err != nil {
			t.Fatal(err)
		}
		// Reported taken again (a duplicate waiting on it): no second step,
		// and the operator's id of the push stays.
		if err := txs.PushTaken(ctx, tr.MerchantID, tr.ID, "", step(payment.EventPushUnconfirmed, now.Add(2*time.Second))); err != nil {
			t.Fatal(err)
		}
		if got, err := txs.Transaction(ctx, tr.MerchantID, tr.ID); err != nil || got.OperatorRef != "72024103000000009" {
			t.Fatalf("operator ref kept with the push: %+v (%v)", got, err)
		}
		if err := txs.Heard(ctx, tr.MerchantID, tr.ID, payment.TransactionEvent{Kind: payment.EventHeard, At: now.Add(3 * time.Second),
			Source: payment.SourcePoll, Status: payment.StatusPending, Detail: "TIP\x00 in progress"}); err != nil {
			t.Fatal(err)
		}
		settle := func(to payment.Status, at time.Time, detail string) bool {
			t.Helper()
			_, changed, err := txs.Settle(ctx, payment.Settlement{MerchantID: tr.MerchantID, TransactionID: tr.ID, To: to, At: at,
				Source: payment.SourceCallback, Detail: detail, Reconcile: true})
			if err != nil {
				t.Fatal(err)
			}
			return changed
		}
		if !settle(payment.StatusSuccess, now.Add(4*time.Second), "TS") {
			t.Fatal("not settled")
		}
		if settle(payment.StatusFailed, now.Add(5*time.Second), "TF") {
			t.Fatal("settled twice")
		}
		got, err := txs.Timeline(ctx, tr.MerchantID, tr.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := []payment.TransactionEvent{
			{Kind: payment.EventCreated, At: now, Status: payment.StatusPending},
			{Kind: payment.EventPushAccepted, At: now.Add(time.Second), Status: payment.StatusPending},
			{Kind: payment.EventHeard, At: now.Add(3 * time.Second), Source: payment.SourcePoll, Status: payment.StatusPending, Detail: "TIP in progress"},
			{Kind: payment.EventHeard, At: now.Add(4 * time.Second), Source: payment.SourceCallback, Status: payment.StatusSuccess, Detail: "TS"},
			{Kind: payment.EventSettled, At: now.Add(4 * time.Second), Source: payment.SourceCallback, Status: payment.StatusSuccess},
			{Kind: payment.EventHeard, At: now.Add(5 * time.Second), Source: payment.SourceCallback, Status: payment.StatusFailed, Detail: "TF"},
			{Kind: payment.EventLateOutcome, At: now.Add(5 * time.Second), Source: payment.SourceCallback, Status: payment.StatusFailed, Detail: "TF"},
		}
		if len(got) != len(want) {
			t.Fatalf("timeline has %d steps, want %d: %+v", len(got), len(want), got)
		}
		for i := range want {
			if g := got[i]; g.Kind != want[i].Kind || !g.At.Equal(want[i].At) || g.Source != want[i].Source || g.Status != want[i].Status || g.Detail != want[i].Detail {
				t.Errorf("step %d = %+v, want %+v", i, g, want[i])
			}
		}

		other, _ := store.NewMerchants(db).Create(ctx, "Other", uuid.NewString()+"@example.td", "correct horse battery", now)
		for _, m := range []string{other.ID, "nope"} {
			if _, err := txs.Timeline(ctx, m, tr.ID); !errors.Is(err, payment.ErrNotFound) {
				t.Errorf("merchant %q read the timeline: %v", m, err)
			}
		}
		if err := txs.Heard(ctx, other.ID, tr.ID, payment.TransactionEvent{Kind: payment.EventHeard, At: now}); err != nil {
			t.Fatal(err)
		}
		if again, _ := txs.Timeline(ctx, tr.MerchantID, tr.ID); len(again) != len(want) {
			t.Errorf("another merchant added a step: %d steps", len(again))
		}

		// A refused push: the transaction and its steps go together.
		refused := create("order-2", now)
		if deleted, err := txs.DeleteTransaction(ctx, refused.MerchantID, refused.ID); err != nil || !deleted {
			t.Fatalf("delete: %v %v", deleted, err)
		}
		var n int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM transaction_events WHERE transaction_id = $1`, refused.ID).Scan(&n); err != nil || n != 0 {
			t.Errorf("%d steps left of a deleted transaction (%v)", n, err)
		}
	})
}

// TestReconciliationCases: a merchant lists only its own cases, newest
// first, open ones apart; resolving needs a note, records who and when, and
// happens once; another merchant can neither read nor resolve a case.
func TestReconciliationCases(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		txs, create := newTransactions(t, db)
		cases := store.NewReconciliationCases(db)
		now := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
		late := func(ref string, at time.Time) *payment.Transaction {
			t.Helper()
			tr := create(ref, at)
			for _, to := range []payment.Status{payment.StatusFailed, payment.StatusSuccess} {
				if _, _, err := txs.Settle(ctx, payment.Settlement{MerchantID: tr.MerchantID, TransactionID: tr.ID, To: to,
					At: at.Add(time.Minute), Source: payment.SourceCallback, Detail: "late", Reconcile: true}); err != nil {
					t.Fatal(err)
				}
			}
			return tr
		}
		first, second := late("a", now), late("b", now.Add(time.Hour))
		merchant := first.MerchantID
		list, err := cases.ForMerchant(ctx, merchant, false)
		if err != nil || len(list) != 2 || list[0].TransactionID != second.ID || list[1].TransactionID != first.ID {
			t.Fatalf("cases: %+v %v", list, err)
		}
		c := list[1]
		if c.FinalStatus != payment.StatusFailed || c.ReportedStatus != payment.StatusSuccess || c.ResolvedAt != nil {
			t.Fatalf("case: %+v", c)
		}
		for _, bad := range []string{"", "   ", "a\x07b", string(make([]byte, 1001))} {
			if _, err := cases.Resolve(ctx, merchant, c.ID, "ana@example.td", bad, now); payment.ErrorCode(err) != payment.EINVALID {
				t.Errorf("note %q: %v, want invalid", bad, err)
			}
		}
		other, _ := store.NewMerchants(db).Create(ctx, "Other", uuid.NewString()+"@example.td", "correct horse battery", now)
		if _, err := cases.Resolve(ctx, other.ID, c.ID, "eve@example.td", "mine now", now); payment.ErrorCode(err) != payment.ENOTFOUND {
			t.Errorf("another merchant resolved the case: %v", err)
		}
		if got, _ := cases.ForMerchant(ctx, other.ID, false); len(got) != 0 {
			t.Errorf("another merchant lists %d cases", len(got))
		}
		at := now.Add(2 * time.Hour)
		done, err := cases.Resolve(ctx, merchant, c.ID, "ana@example.td", "Refunded the payer by hand\nref R-1", at)
		if err != nil || done.ResolvedAt == nil || !done.ResolvedAt.Equal(at) || done.ResolvedBy != "ana@example.td" || done.ResolutionNote != "Refunded the payer by hand\nref R-1" {
			t.Fatalf("resolved: %+v %v", done, err)
		}
		if _, err := cases.Resolve(ctx, merchant, c.ID, "bob@example.td", "again", at); payment.ErrorCode(err) != payment.EUNPROCESSABLE {
			t.Errorf("resolved twice: %v", err)
		}
		open, _ := cases.ForMerchant(ctx, merchant, true)
		if n, _ := cases.CountOpen(ctx, merchant); len(open) != 1 || open[0].ID == c.ID || n != 1 {
			t.Errorf("open cases: %d listed, %d counted; want 1", len(open), n)
		}
	})
}
