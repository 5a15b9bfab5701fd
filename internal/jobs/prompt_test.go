package jobs_test

import (
	"io"
	"log/slog"
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
func TestFirstPollNeedsNoSchedulerPass(t *testing.T) {
	for _, engine := range testdb.Engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
			a, err := app.Open(ctx, app.Config{DatabaseURL: testdb.URL(t, engine), PendingTTL: time.Minute, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { a.Close() })
			m, err := a.Merchants.Create(ctx, "Prompt", "prompt@example.com", "correct horse battery", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			tx := initiate(t, a, m.ID, "prompt")
			for kind, want := range map[string]string{"payment_poll": "available", "payment_expire": "scheduled"} {
				var state string
				if err := a.DB.QueryRowContext(ctx, `SELECT state FROM river_job WHERE kind = $1`, kind).Scan(&state); err != nil {
					t.Fatal(err)
				}
				if state != want {
					t.Errorf("%s of %s inserted %s, want %s", kind, tx.ID, state, want)
				}
			}
		})
	}
}
