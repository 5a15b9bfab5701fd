package app_test

import (
	"testing"
	"time"

	"github.com/momopay/momopay/internal/operator"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/testdb"
)

// TestTimelineThroughThePaymentService: the steps the payment service
// records as a payment lives: created and push accepted by Initiate, a
// status poll's "still pending" with the operator's words, a callback that
// settles nothing, and the expiry check with its final state. Another
// payment whose operator answers records the poll that settled it.
func TestTimelineThroughThePaymentService(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		a, clk, m := openIdle(t, engine)
		ctx := t.Context()
		tx := initiate(t, a, m, "tl-1", "+23560000003") // never answers
		clk.Advance(3 * time.Second)
		if _, err := a.Payments.Poll(ctx, m, tx.ID); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
		if err := a.Payments.SettleByRef(ctx, payment.OperatorMoov, tx.InternalRef,
			operator.Outcome{State: operator.Pending, Detail: "TIP: in progress"}, payment.SourceCallback); err != nil {
			t.Fatal(err)
		}
		clk.Advance(tx.ExpiresAt.Sub(clk.Now()))
		if _, err := a.Payments.Expire(ctx, m, tx.ID); err != nil {
			t.Fatal(err)
		}
		steps, err := a.Transactions.Timeline(ctx, m, tx.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := []struct {
			kind   payment.EventKind
			source string
			status payment.Status
			detail string
		}{
			{payment.EventCreated, "", payment.StatusPending, ""},
			{payment.EventPushAccepted, "", payment.StatusPending, ""},
			{payment.EventHeard, payment.SourcePoll, payment.StatusPending, "moov 100: pending (PENDING)"}, // the Moov simulator's answer
			{payment.EventHeard, payment.SourceCallback, payment.StatusPending, "TIP: in progress"},
			{payment.EventHeard, payment.SourceExpiry, payment.StatusTimeout, "no answer before expires_at"},
			{payment.EventSettled, payment.SourceExpiry, payment.StatusTimeout, ""},
		}
		if len(steps) != len(want) {
			t.Fatalf("%d steps, want %d: %+v", len(steps), len(want), steps)
		}
		for i, w := range want {
			if s := steps[i]; s.Kind != w.kind || s.Source != w.source || s.Status != w.status || s.Detail != w.detail {
				t.Errorf("step %d = %+v, want %+v", i, s, w)
			}
		}
		if !steps[0].At.Equal(tx.CreatedAt) || !steps[5].At.Equal(tx.ExpiresAt) {
			t.Errorf("step times: created %v (want %v), settled %v (want %v)", steps[0].At, tx.CreatedAt, steps[5].At, tx.ExpiresAt)
		}

		lost := initiate(t, a, m, "tl-2", "+23560000006") // confirms, callback lost
		clk.Advance(3 * time.Second)
		if _, err := a.Payments.Poll(ctx, m, lost.ID); err != nil {
			t.Fatal(err)
		}
		steps, _ = a.Transactions.Timeline(ctx, m, lost.ID)
		if n := len(steps); n != 4 || steps[2].Source != payment.SourcePoll || steps[2].Status != payment.StatusSuccess ||
			steps[2].Detail != "moov 0: completed (SUCCESS)" || steps[3].Kind != payment.EventSettled {
			t.Errorf("settled by a poll: %+v", steps)
		}
	})
}
