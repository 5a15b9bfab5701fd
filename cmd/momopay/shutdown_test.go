package main_test

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/store"
	"github.com/momopay/momopay/internal/testdb"
)

// TestShutdownGraceHandsJobsBack: work still running when the shutdown
// grace ends (a webhook attempt whose receiver never answers) is cancelled
// and handed back, not left held: the attempt is recorded as interrupted
// and the delivery is pending with no lease, due for the next instance.
// serve still exits 0, soon after the grace.
func TestShutdownGraceHandsJobsBack(t *testing.T) {
	for _, engine := range testdb.Engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			dbURL := testdb.URL(t, engine)
			rc := newHangingReceiver(t)
			p := serve(t, dbURL, "--shutdown-grace", "1s")
			key, merchant := demoCredentials(t, p)
			webhookCreate(t, dbURL, merchant, rc.URL)
			create(t, p, key, "grace-1", "+23560000001")
			rc.waitFirst(t, 15*time.Second) // the attempt now hangs

			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			sent := time.Now()
			if err := p.cmd.Wait(); err != nil {
				t.Fatalf("exit after SIGTERM: %v", err)
			}
			if took := time.Since(sent); took < time.Second || took > 4*time.Second {
				t.Errorf("stopped %s after SIGTERM with a 1 s grace and a hanging job", took.Round(time.Millisecond))
			}
			db, err := store.Open(t.Context(), dbURL)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var state, stage string
			var leased bool
			if err := db.QueryRow(`SELECT d.state, d.lease_until IS NOT NULL, a.stage
				FROM webhook_deliveries d JOIN webhook_attempts a ON a.delivery_id = d.id`).Scan(&state, &leased, &stage); err != nil {
				t.Fatal(err)
			}
			if state != "pending" || leased || stage != "interrupted" {
				t.Errorf("after the stop: delivery %s (leased %v), its attempt %s; want pending, no lease, interrupted", state, leased, stage)
			}
		})
	}
}

func webhookCreate(t *testing.T, dbURL, merchant, url string) {
	t.Helper()
	if out, err := exec.Command(binary, "webhook", "create", "--merchant", merchant, "--url", url, "--db", dbURL).CombinedOutput(); err != nil {
		t.Fatalf("webhook create: %v %s", err, out)
	}
}
