package app_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/app"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testserver"
)

// openIdle wires momopay on a fresh database with a fake clock and runs no
// background workers, so the test itself plays the jobs.
func openIdle(t *testing.T, engine string) (*app.App, *testserver.Clock, string) {
	t.Helper()
	clk := testserver.NewClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	a, err := app.Open(context.Background(), app.Config{
		DatabaseURL: testdb.URL(t, engine), Now: clk.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	m, err := a.Merchants.Create(t.Context(), "Idle", "idle@example.com", "correct horse battery", clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	return a, clk, m.ID
}

func initiate(t *testing.T, a *app.App, merchant, ref, phone string) *payment.Transaction {
	t.Helper()
	tx, err := a.Payments.Initiate(t.Context(), merchant, payment.CreateRequest{
		Reference: ref, Amount: 5000, Currency: "XAF", Operator: "MOOV", PhoneNumber: phone,
	})
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// TestPendingWindow walks the 5-minute window with an injected clock:
// polls back off, the expiry check waits for expires_at, and then the
// operator's last word decides between TIMEOUT, EXPIRED and an outcome.
func TestPendingWindow(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		a, clk, m := openIdle(t, engine)
		ctx := t.Context()
		noAnswer := initiate(t, a, m, "w-1", "+23560000003")
		expired := initiate(t, a, m, "w-2", "+23560000004")
		lostCallback := initiate(t, a, m, "w-3", "+23560000006")
		if got := noAnswer.ExpiresAt.Sub(noAnswer.CreatedAt); got != 5*time.Minute {
			t.Fatalf("expires_at - created_at = %s", got)
		}

		// The poll job starts at once and waits for the first poll at 3 s.
		clk.Advance(time.Second)
		if next, err := a.Payments.Poll(ctx, m, lostCallback.ID); err != nil || next != 2*time.Second {
			t.Fatalf("poll at 1 s: %s %v, want the first real poll in 2 s", next, err)
		}
		// The operator knows the outcome at 2 s: the first poll settles.
		clk.Advance(2 * time.Second)
		if next, err := a.Payments.Poll(ctx, m, lostCallback.ID); err != nil || next != 0 {
			t.Fatalf("poll after the answer: %s %v", next, err)
		}
		assertStatus(t, a, m, lostCallback.ID, payment.StatusSuccess)

		// The operator's own expiry is not acted on before expires_at.
		if next, err := a.Payments.Poll(ctx, m, expired.ID); err != nil || next == 0 {
			t.Fatalf("poll of an operator-expired payment: %s %v", next, err)
		}
		assertStatus(t, a, m, expired.ID, payment.StatusPending)

		// Polls back off as the payment ages, and stop before expires_at.
		clk.Advance(time.Minute)
		if next, _ := a.Payments.Poll(ctx, m, noAnswer.ID); next != 10*time.Second {
			t.Errorf("poll at 1m: next in %s, want 10s", next)
		}
		clk.Advance(3*time.Minute + 50*time.Second) // 4m53s
		if next, _ := a.Payments.Poll(ctx, m, noAnswer.ID); next != 0 {
			t.Errorf("poll 7 s before expiry: next in %s, want none (the expiry check takes over)", next)
		}

		// The expiry check run early waits; at expires_at it decides.
		if wait, err := a.Payments.Expire(ctx, m, noAnswer.ID); err != nil || wait != 7*time.Second {
			t.Fatalf("early expiry check: wait %s %v", wait, err)
		}
		assertStatus(t, a, m, noAnswer.ID, payment.StatusPending)
		clk.Advance(7 * time.Second)
		for _, id := range []string{noAnswer.ID, expired.ID, lostCallback.ID} {
			if wait, err := a.Payments.Expire(ctx, m, id); err != nil || wait != 0 {
				t.Fatalf("expiry check: %s %v", wait, err)
			}
		}
		assertStatus(t, a, m, noAnswer.ID, payment.StatusTimeout)
		assertStatus(t, a, m, expired.ID, payment.StatusExpired)
		assertStatus(t, a, m, lostCallback.ID, payment.StatusSuccess)

		got, _ := a.Payments.Get(ctx, m, noAnswer.ID)
		if !got.UpdatedAt.Equal(clk.Now()) {
			t.Errorf("updated_at %s, want the settling time %s", got.UpdatedAt, clk.Now())
		}
	})
}

func assertStatus(t *testing.T, a *app.App, merchant, id string, want payment.Status) {
	t.Helper()
	got, err := a.Payments.Get(t.Context(), merchant, id)
	if err != nil || got.Status != want {
		t.Fatalf("status %v (%v), want %s", got, err, want)
	}
}

// TestSettleRace: callbacks, polls and expiry checks settling one
// transaction at the same instant make exactly one transition, and one
// reconciliation case for each different outcome that lost.
func TestSettleRace(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		a, clk, m := openIdle(t, engine)
		for round := range 5 {
			tx := initiate(t, a, m, "race-"+string(rune('a'+round)), "+23566000000")
			clk.Advance(5 * time.Minute)
			var wg sync.WaitGroup
			var mu sync.Mutex
			transitions, reported := 0, map[payment.Status]int{}
			settle := func(to payment.Status, source string) {
				_, changed, err := a.Payments.Settle(context.Background(), m, tx.ID, to, source, "race")
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Error(err)
				}
				if changed {
					transitions++
				}
				reported[to]++
			}
			for range 8 {
				wg.Go(func() { settle(payment.StatusSuccess, payment.SourceCallback) })
				wg.Go(func() { settle(payment.StatusFailed, payment.SourcePoll) })
				wg.Go(func() {
					if _, err := a.Payments.Expire(context.Background(), m, tx.ID); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			final, _ := a.Payments.Get(t.Context(), m, tx.ID)
			expiryWon := final.Status == payment.StatusTimeout
			if (expiryWon && transitions != 0) || (!expiryWon && transitions != 1) {
				t.Fatalf("round %d: final %s after %d transitions by Settle", round, final.Status, transitions)
			}
			// Each different outcome that lost left one case, however
			// often it was heard.
			cases, _ := a.Cases.List(t.Context())
			n := 0
			for _, c := range cases {
				if c.TransactionID == tx.ID {
					n++
					if c.FinalStatus != final.Status || c.ReportedStatus == final.Status {
						t.Errorf("case %+v for final %s", c, final.Status)
					}
				}
			}
			want := 0
			for _, s := range []payment.Status{payment.StatusSuccess, payment.StatusFailed} {
				if s != final.Status && reported[s] > 0 {
					want++
				}
			}
			if n != want {
				t.Errorf("round %d: %d reconciliation cases, want %d", round, n, want)
			}
		}
	})
}

// TestListTieBreak: transactions created in the same microsecond are
// ordered by id, so consecutive pages never repeat or skip one.
func TestListTieBreak(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		a, _, m := openIdle(t, engine) // the clock stands still
		for i := range 7 {
			initiate(t, a, m, "tie-"+string(rune('a'+i)), "+23566000000")
		}
		seen := map[string]bool{}
		var last string
		for page := 1; page <= 4; page++ {
			p, err := a.Payments.List(t.Context(), m, payment.ListFilter{Page: page, PerPage: 2})
			if err != nil || p.Total != 7 {
				t.Fatal(err, p)
			}
			for _, tx := range p.Transactions {
				if seen[tx.ID] || (last != "" && tx.ID >= last) {
					t.Fatalf("page %d: %s out of order or repeated", page, tx.ID)
				}
				seen[tx.ID], last = true, tx.ID
			}
		}
		if len(seen) != 7 {
			t.Errorf("pages held %d distinct transactions, want 7", len(seen))
		}
	})
}
