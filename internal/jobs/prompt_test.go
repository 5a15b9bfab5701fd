package jobs_test

import (
	"testing"
	"time"

	"github.com/momopay/momopay/internal/app"
	"github.com/momopay/momopay/internal/testdb"
)

// TestFirstPollNeedsNoSchedulerPass: a new payment's first poll, due in 3 s,
// is inserted ready to fetch at its time (available, its scheduled_at kept),
// not left for River's next scheduler pass, which came up to 5 s later and
// made poll-only payments settle at 3 to 8 s; the expiry check, due at
// expires_at, stays scheduled.
//
// The expiry check also comes ahead of the polls in River's fetch order
// (priority, then time), so that when due polls queue up on a saturated
// machine it does not wait behind them ("go run ./bench -only sustain"
// showed TIMEOUTs 2.2–2.5 s late at p99 with equal priorities, 0.3–0.6 s
// with the expiry check first).
func TestFirstPollNeedsNoSchedulerPass(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		ctx := t.Context()
		a := openApp(t, engine, app.Config{PendingTTL: time.Minute})
		m, err := a.Merchants.Create(ctx, "Prompt", "prompt@example.com", "correct horse battery", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		tx := initiate(t, a, m.ID, "prompt")
		priority := map[string]int{}
		for kind, want := range map[string]string{"payment_poll": "available", "payment_expire": "scheduled"} {
			var state string
			var p int
			if err := a.DB.QueryRowContext(ctx, `SELECT state, priority FROM river_job WHERE kind = $1`, kind).Scan(&state, &p); err != nil {
				t.Fatal(err)
			}
			if state != want {
				t.Errorf("%s of %s inserted %s, want %s", kind, tx.ID, state, want)
			}
			priority[kind] = p
		}
		if priority["payment_expire"] >= priority["payment_poll"] {
			t.Errorf("priorities %v: want the expiry check's ahead of (lower than) the poll's", priority)
		}
	})
}
