package webhook_test

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/app"
	"github.com/momopay/momopay/internal/operator/sandbox"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testserver"
	"github.com/momopay/momopay/internal/webhook"
)

// burst is how many deliveries one BenchmarkDrainBurst iteration drains.
// The default keeps a CI run (-benchtime 1x) to seconds; the README's figure
// is measured with -webhook.burst=10000.
var burst = flag.Int("webhook.burst", 1000, "deliveries per BenchmarkDrainBurst iteration")

// Shape of the burst: many merchants with several endpoints each, as a busy
// minute of settlements produces.
const (
	benchMerchants = 10
	benchEndpoints = 5
)

// BenchmarkDrainBurst measures how fast the real delivery path (the
// dispatcher with the production worker count, Attempt, signing, HTTP,
// recording) drains a backlog of deliveries to a local receiver that
// answers 204 at once. The backlog is queued first through the real outbox
// (payments settled with Payments.Settle); the clock runs from starting the
// workers until every delivery is recorded delivered. It reports events/s.
func BenchmarkDrainBurst(b *testing.B) {
	perEndpoint := max(*burst/(benchMerchants*benchEndpoints), 1)
	total := perEndpoint * benchMerchants * benchEndpoints
	for _, engine := range testdb.Engines {
		b.Run(engine, func(b *testing.B) {
			var elapsed time.Duration
			for range b.N {
				b.StopTimer()
				a, received := prepareBurst(b, engine, perEndpoint)
				ctx := context.Background()
				b.StartTimer()
				start := time.Now()
				d := a.Webhooks.NewDispatcher(webhook.DispatchConfig{})
				d.Start(ctx)
				waitDelivered(b, a, received, total)
				elapsed += time.Since(start)
				b.StopTimer()
				d.Stop(ctx)
				a.Close()
			}
			b.ReportMetric(float64(total*b.N)/elapsed.Seconds(), "events/s")
			b.ReportMetric(0, "ns/op") // the figure is events/s; one op is a whole burst
		})
	}
}

func prepareBurst(b *testing.B, engine string, perEndpoint int) (*app.App, *atomic.Int64) {
	b.Helper()
	ctx := context.Background()
	var received atomic.Int64
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(rc.Close)
	a, err := app.Open(ctx, app.Config{DatabaseURL: testdb.URL(b, engine), Logger: quietLog})
	if err != nil {
		b.Fatal(err)
	}
	f := &fixture{app: a, clock: testserver.NewClock(time.Now())}
	for m := range benchMerchants {
		merchant := f.newMerchant(b)
		for e := range benchEndpoints { // one receiver, a distinct URL per endpoint
			if _, err := a.Webhooks.CreateEndpoint(ctx, merchant, fmt.Sprintf("%s/%d", rc.URL, e)); err != nil {
				b.Fatal(err)
			}
		}
		for i := range perEndpoint {
			tx, err := a.Payments.Initiate(ctx, merchant, payment.CreateRequest{Reference: fmt.Sprintf("burst-%d-%d", m, i),
				Amount: 1000, Currency: "XAF", Operator: "AIRTEL", PhoneNumber: sandbox.PhoneNoAnswer})
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := a.Payments.Settle(ctx, merchant, tx.ID, payment.StatusSuccess, payment.SourceSandbox, ""); err != nil {
				b.Fatal(err)
			}
		}
	}
	return a, &received
}

func waitDelivered(b *testing.B, a *app.App, received *atomic.Int64, want int) {
	b.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for received.Load() < int64(want) {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d deliveries arrived", received.Load(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for {
		var n int
		if err := a.DB.QueryRow(`SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'delivered'`).Scan(&n); err != nil {
			b.Fatal(err)
		}
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d deliveries recorded delivered", n, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// BenchmarkSettleToReceived measures how long a merchant waits for the
// news: from the start of the settling call (Payments.Settle, which
// commits the state change with its delivery) until a local receiver has
// the webhook, one payment at a time, with the production dispatcher
// settings. On PostgreSQL the dispatcher hears of the delivery by
// LISTEN/NOTIFY; on SQLite it polls. It reports
// the median and the 95th percentile.
func BenchmarkSettleToReceived(b *testing.B) {
	settleToReceived(b, 0)
}

// backlog is how many deliveries BenchmarkSettleToReceivedBehindABacklog
// queues for the endpoint that never answers.
var backlog = flag.Int("webhook.backlog", 20000, "deliveries waiting behind a dead endpoint in BenchmarkSettleToReceivedBehindABacklog")

// BenchmarkSettleToReceivedBehindABacklog is BenchmarkSettleToReceived
// while another merchant's endpoint, which never answers, holds its bound
// of workers and has -webhook.backlog deliveries due behind them: how
// much one merchant's dead receiver costs everybody else. A look that
// walked every due delivery walked that whole backlog each time.
func BenchmarkSettleToReceivedBehindABacklog(b *testing.B) {
	settleToReceived(b, *backlog)
}

// settleToReceived runs BenchmarkSettleToReceived with backlog deliveries
// of another merchant due to an endpoint that never answers.
func settleToReceived(b *testing.B, backlog int) {
	for _, engine := range testdb.Engines {
		b.Run(engine, func(b *testing.B) {
			ctx := context.Background()
			arrived := make(chan time.Time, 1)
			rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusNoContent)
				arrived <- time.Now()
			}))
			defer rc.Close()
			a, err := app.Open(ctx, app.Config{DatabaseURL: testdb.URL(b, engine), Logger: quietLog})
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			f := &fixture{app: a, clock: testserver.NewClock(time.Now())}
			merchant := f.newMerchant(b)
			if _, err := a.Webhooks.CreateEndpoint(ctx, merchant, rc.URL); err != nil {
				b.Fatal(err)
			}
			if backlog > 0 {
				queueBehindDeadEndpoint(b, f, backlog)
			}
			d := a.Webhooks.NewDispatcher(webhook.DispatchConfig{})
			d.Start(ctx)
			defer func() {
				stop, cancel := context.WithTimeout(ctx, time.Second) // the dead endpoint's attempts are cut
				defer cancel()
				d.Stop(stop)
			}()
			waits := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				tx, err := a.Payments.Initiate(ctx, merchant, payment.CreateRequest{Reference: fmt.Sprintf("wait-%d", i),
					Amount: 1000, Currency: "XAF", Operator: "AIRTEL", PhoneNumber: sandbox.PhoneNoAnswer})
				if err != nil {
					b.Fatal(err)
				}
				// Let the listener and the queue go quiet, as between two
				// payments of a merchant, so each wait starts from idle.
				time.Sleep(20 * time.Millisecond)
				b.StartTimer()
				start := time.Now()
				if _, _, err := a.Payments.Settle(ctx, merchant, tx.ID, payment.StatusSuccess, payment.SourceSandbox, ""); err != nil {
					b.Fatal(err)
				}
				select {
				case at := <-arrived:
					waits = append(waits, at.Sub(start))
				case <-time.After(30 * time.Second):
					b.Fatal("no webhook within 30 s")
				}
			}
			b.StopTimer() // not the dispatcher's stop
			slices.Sort(waits)
			b.ReportMetric(float64(waits[len(waits)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(waits[len(waits)*95/100].Microseconds())/1000, "p95-ms")
		})
	}
}

// queueBehindDeadEndpoint gives a new merchant an endpoint that never
// answers (until the benchmark ends) and n deliveries due to it, written
// straight into the table (test deliveries, which need no payment each).
func queueBehindDeadEndpoint(b *testing.B, f *fixture, n int) {
	b.Helper()
	ctx := context.Background()
	done := make(chan struct{})
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-done:
		case <-r.Context().Done():
		}
	}))
	b.Cleanup(dead.Close)
	b.Cleanup(func() { close(done) })
	merchant := f.newMerchant(b)
	e, err := f.app.Webhooks.CreateEndpoint(ctx, merchant, dead.URL)
	if err != nil {
		b.Fatal(err)
	}
	db := f.app.DB
	due := db.Time(time.Now().Add(-time.Minute))
	err = db.InTx(ctx, func(tx *sql.Tx) error {
		for range n {
			if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_deliveries
				(id, merchant_id, endpoint_id, event, transaction_id, test, payload, state, attempts, next_attempt_at, created_at, updated_at)
				VALUES ($1, $2, $3, 'payment.succeeded', NULL, TRUE, '{}', 'pending', 0, $4, $4, $4)`,
				uuid.NewString(), merchant, e.ID, due); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	// Statistics that know of the backlog, as the database's own
	// maintenance soon has: with them, PostgreSQL chose an index by
	// next_attempt_at for the other endpoints' deliveries, and walked the
	// backlog anyway, while that index existed.
	if _, err := db.ExecContext(ctx, `ANALYZE webhook_deliveries`); err != nil {
		b.Fatal(err)
	}
}

// pruneN is how many finished deliveries BenchmarkPrune deletes.
var pruneN = flag.Int("webhook.prune", 20000, "finished deliveries (with an attempt each) that BenchmarkPrune deletes")

// BenchmarkPrune times Service.Prune over -webhook.prune delivered
// deliveries of one merchant, each with one attempt, created 100 days
// ago, written straight into the tables. It reports deliveries deleted a
// second and the mean time of one batch's transaction (ms-per-batch),
// which is how long pruning holds its rows, or SQLite's writer, at once.
//
//	go test -run '^$' -bench BenchmarkPrune -benchtime 1x ./internal/webhook -args -webhook.prune=100000
func BenchmarkPrune(b *testing.B) {
	for _, engine := range testserver.Engines {
		b.Run(engine, func(b *testing.B) {
			f := setup(b, engine)
			ctx := context.Background()
			e, err := f.app.Webhooks.CreateEndpoint(ctx, f.merchant, "http://127.0.0.1:9/")
			if err != nil {
				b.Fatal(err)
			}
			old := f.app.DB.Time(f.clock.Now().Add(-100 * 24 * time.Hour))
			var total time.Duration
			for b.Loop() {
				b.StopTimer()
				err := f.app.DB.InTx(ctx, func(tx *sql.Tx) error {
					for range *pruneN {
						id := uuid.NewString()
						if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_deliveries
							(id, merchant_id, endpoint_id, event, transaction_id, test, payload, state, attempts, next_attempt_at, created_at, updated_at)
							VALUES ($1, $2, $3, 'transaction.test', NULL, TRUE, '{"event":"transaction.test"}', 'delivered', 1, NULL, $4, $4)`,
							id, f.merchant, e.ID, old); err != nil {
							return err
						}
						if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_attempts
							(id, merchant_id, delivery_id, number, manual, attempted_at, status_code, error, latency_ms, response_excerpt)
							VALUES ($1, $2, $3, 1, FALSE, $4, 200, '', 3, 'ok')`, uuid.NewString(), f.merchant, id, old); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := f.app.DB.ExecContext(ctx, `ANALYZE`); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				n, err := f.app.Webhooks.Prune(ctx, "", f.clock.Now().Add(-90*24*time.Hour), false)
				total += time.Since(start)
				if err != nil || n != *pruneN {
					b.Fatalf("pruned %d, %v; want %d", n, err, *pruneN)
				}
			}
			perRun := total / time.Duration(b.N)
			b.ReportMetric(float64(*pruneN)/perRun.Seconds(), "deliveries/s")
			b.ReportMetric(float64(perRun.Microseconds())/1000/float64((*pruneN+webhook.PruneBatch()-1)/webhook.PruneBatch()), "ms-per-batch")
		})
	}
}
